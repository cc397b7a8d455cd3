"""The sandbox: what a student kernel may see and do (view, uid, cgroups, seccomp, working copies, XLA cache)."""
