"""The course's maintenance tools, run from the checkout's root as modules: `python -m tools.NAME`
(the Makefile's targets do). The constants every part of the course shares are
`courseinfo.course`."""
