"""nbgrader's submit, for the students' servers on the hub: a hand-in only its author and the grader can read.

nbgrader 0.9.6 makes each hand-in folder in the exchange's inbound/ mode 0777 and its files 0644
("hidden from other users by the timestamp"): any student who learns the folder's name may read
it, delete the notebook in it or add files. On the hub, inbound/ is setgid and owned by the
course's grader (hub/layout.py), so a new hand-in already belongs to the grader's group; this
submit then makes it 0750 (folders) / 0640 (files): its author and the grader read it, no other
student does, whatever they know. It is the *author's* own server that runs this
(hub/singleuser/nbgrader_config.py), so it protects the author; another student's server
configuration cannot weaken it. Links inside the hand-in are not followed (os.walk, lchmod-free:
a link is skipped; collect never takes one).
"""
from __future__ import annotations

import os
import stat

from nbgrader.exchange.default.submit import ExchangeSubmit


class PrivateExchangeSubmit(ExchangeSubmit):
    def copy_files(self):
        super().copy_files()
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        for dirpath, dirnames, filenames in os.walk(dest):
            for name in filenames:
                path = os.path.join(dirpath, name)
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.chmod(path, 0o640)
            for name in dirnames:
                path = os.path.join(dirpath, name)
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.chmod(path, 0o750)
        os.chmod(dest, 0o750)
