"""nbgrader's submit, for the students' servers on the hub: a hand-in only its author and the grader can read.

nbgrader 0.9.6 makes each hand-in folder in the exchange's inbound/ mode 0777 and its files 0644
("hidden from other users by the timestamp"): any student who learns the folder's name may read
it, delete the notebook in it or add files. On the hub, inbound/ is setgid and owned by the
course's grader (hub/layout.py), so a new hand-in folder belongs to the grader's group, and so does
everything created in it while it keeps the setgid bit. nbgrader's copytree would drop that bit at
once (it copies the source folder's mode), so the hand-in is copied here without copying modes;
then the folder is made 0750 and its files 0640: its author and the grader read it, no other
student does, whatever they know. It is the *author's* own server that runs this
(hub/singleuser/nbgrader_config.py), so it protects the author; another student's server
configuration cannot weaken it. Links inside the hand-in are not followed (os.walk, lchmod-free:
a link is skipped; collect never takes one).
"""

from __future__ import annotations

import os
import shutil
import stat

from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import ignore_patterns


class PrivateExchangeSubmit(ExchangeSubmit):
    def do_copy(self, src, dest):
        if os.path.dirname(os.path.abspath(dest)) != os.path.abspath(self.inbound_path):
            return super().do_copy(src, dest)  # the author's own cache: nbgrader's copy
        if self.get_size(src) > 1000 * self.coursedir.max_dir_size:
            raise RuntimeError(f"Directory size is too big (maximum {1000 * self.coursedir.max_dir_size} bytes)")
        ignore = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )
        os.mkdir(dest)  # inherits inbound/'s group and setgid
        for dirpath, dirnames, filenames in os.walk(src):
            rel = os.path.relpath(dirpath, src)
            skip = ignore(dirpath, dirnames + filenames)
            dirnames[:] = [d for d in dirnames if d not in skip and not os.path.islink(os.path.join(dirpath, d))]
            for d in dirnames:
                os.mkdir(os.path.join(dest, rel, d))
            for name in filenames:
                path = os.path.join(dirpath, name)
                if name not in skip and stat.S_ISREG(os.lstat(path).st_mode):
                    shutil.copyfile(path, os.path.join(dest, rel, name))

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
