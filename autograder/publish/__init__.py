"""Publishing: every file the grader writes (grades, results, feedback pages, class report, gradebook)."""
