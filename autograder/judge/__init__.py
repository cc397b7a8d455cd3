"""Judging: observations -> verdicts -> points, outside any kernel (writes no files)."""
