"""The course: which assignments there are (source notebooks and their editions), read and rebuilt trusted."""
