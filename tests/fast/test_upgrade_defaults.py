"""ci/upgrade-test's comparison of ceph-osd's defaults with Debian's: a build
that configured differently from Debian's (as a release resumed with an
earlier CMake cache did: osd_erasure_code_plugins "jerasure lrc isa") fails
it; options our patches add do not."""
import unittest

from cephperf.runtime.upgrade import changed_defaults

STOCK = {"osd_erasure_code_plugins": "jerasure lrc", "admin_socket_mode": "", "osd_op_num_shards": "0"}


class ChangedDefaultsTest(unittest.TestCase):
    def test_the_same_defaults_and_added_options_pass(self):
        ours = dict(STOCK, bluestore_onode_cache_absent="true")
        self.assertEqual(changed_defaults(STOCK, ours), [])

    def test_a_changed_default_is_named_with_both_values(self):
        ours = dict(STOCK, osd_erasure_code_plugins="jerasure lrc isa")
        self.assertEqual(changed_defaults(STOCK, ours),
                         ["osd_erasure_code_plugins = 'jerasure lrc' in Debian's, 'jerasure lrc isa' in ours"])

    def test_an_empty_default_given_a_value_and_a_missing_option_fail(self):
        ours = dict(STOCK, admin_socket_mode="0644")
        del ours["osd_op_num_shards"]
        self.assertEqual(changed_defaults(STOCK, ours),
                         ["admin_socket_mode = '' in Debian's, '0644' in ours", "osd_op_num_shards missing from ours"])


if __name__ == "__main__":
    unittest.main()
