"""The course's maintenance tools, run from the checkout's root as modules: `python -m tools.NAME`
(the Makefile's targets do). `tools.course` holds the constants every part of the course shares."""
