"""tests/bench/benchsetup.py: what the root benches (cpubench.py,
netbench.py) change on the host, each change recorded with its undo step.
teardown() undoes them in reverse order and carries on past a step that
fails, so that a bench that stops half-way still puts the host back."""
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAM_FILE = "/etc/pam.d/clihost-jail"


class HostChanges:
    def __init__(self):
        self.undo = []

    def install_pam_file(self):
        """The repository's PAM service file, unless the host has one."""
        if not os.path.exists(PAM_FILE):
            shutil.copy(os.path.join(REPO, "pam", "clihost-jail"), PAM_FILE)
            os.chmod(PAM_FILE, 0o644)
            self.undo.append(lambda: os.unlink(PAM_FILE))

    def make_work_dir(self, prefix):
        """A directory under /run for the bench's configs, 0755 so that the
        helper (which refuses a config it cannot trust) and tenants read it."""
        work = tempfile.mkdtemp(prefix=prefix, dir="/run")
        os.chmod(work, 0o755)
        self.undo.append(lambda: shutil.rmtree(work, ignore_errors=True))
        return work

    def teardown(self):
        for f in reversed(self.undo):
            try:
                f()
            except Exception as e:  # keep undoing the rest
                print("cleanup:", e, file=sys.stderr, flush=True)
        self.undo = []
