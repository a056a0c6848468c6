"""The fork server's malloc: large buffers kept for reuse, given back between checks."""

from __future__ import annotations

import pytest

from gradverify.run import allocator

pytestmark = pytest.mark.skipif(not allocator._is_glibc(), reason="malloc is not glibc's")

# In a fresh interpreter: the resident memory after a 64 MB buffer is written and freed, and
# again after release_free_memory, in MB above what the process held before.
FREED_AND_RELEASED = """
import os
from gradverify.run import allocator

def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

kept = allocator.keep_freed_memory()
before = resident_mb()
buffer = bytearray(64 * 2**20)  # written through: every page resident
del buffer
freed = resident_mb() - before
allocator.release_free_memory()
print(kept, round(freed), round(resident_mb() - before))
"""


def test_a_freed_buffer_stays_for_reuse_until_released(fresh_python, monkeypatch):
    for name in (*allocator._USER_SETTINGS, "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    kept, freed, released = fresh_python(FREED_AND_RELEASED).split()
    assert kept == "True"
    assert int(freed) >= 60  # freed, but still the process's to reuse
    assert int(released) <= 8  # given back


@pytest.mark.parametrize(
    "environment",
    [{"MALLOC_MMAP_MAX_": "65536"}, {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4096"}],
)
def test_a_user_who_tunes_malloc_keeps_the_settings_chosen(monkeypatch, environment):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert allocator.keep_freed_memory() is False
