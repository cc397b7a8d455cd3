# nbgrader for any formgrader of this course (`make formgrader`; the hub's formgrader services put this
# folder on their JUPYTER_CONFIG_PATH too): formgrader's Collect button runs the course's hardened
# collect (autograder/formgrader/collect.py), which takes from the exchange's inbound/ only what
# autograder/intake/inbound.py accepts (regular files, never a link, bounded, owned by the named student's
# Unix user, not dated in the future), reports every refused hand-in by name in the Collect dialog,
# and lets nbgrader's own collect run on that copy.
c = get_config()  # noqa: F821

c.ExchangeFactory.collect = "autograder.formgrader.collect.HardenedCollect"
