"""The OSD device layouts: bench/layouts.toml as the gate reads it, the
node's check of the layout the running OSD reports, the conf that points
each OSD at its own device, and the loop device's ioctl argument."""
import unittest
from pathlib import Path
from unittest import mock

from cephperf.bench import layouts
from cephperf.bench.report import layout_seen_text
from cephperf.common import StageError
from cephperf.loop_devices import LOOP_CONFIG, loop_config
from cephperf.runtime.cluster_conf import base_conf
from cephperf.runtime.layout import mismatches
from cephperf.runtime.spec import NodeSpec


class LayoutsFileTest(unittest.TestCase):
    def test_both_layouts_say_what_the_osd_must_report(self):
        hdd, flash = layouts.load_layout("hdd"), layouts.load_layout("flash")
        self.assertEqual((hdd["device"], hdd["expect"]), ("file", {"bluestore_bdev_rotational": "1", "op_shards": 1}))
        self.assertEqual((flash["device"], flash["rotational"]), ("loop", False))
        self.assertEqual(flash["expect"], {"bluestore_bdev_rotational": "0", "op_shards": 8})
        self.assertEqual(layouts.load_layout()["name"], "hdd")

    def test_an_unknown_layout_names_the_file_and_the_known_ones(self):
        with self.assertRaises(StageError) as e:
            layouts.load_layout("nvme")
        self.assertIn("layouts.toml", str(e.exception))
        self.assertIn("hdd, flash", str(e.exception))

    def test_an_unknown_device_kind_is_refused(self):
        with mock.patch.object(layouts, "load_toml", return_value={"odd": {"device": "ramdisk"}}):
            with self.assertRaises(StageError) as e:
                layouts.load_layout("odd")
        self.assertIn("[odd] device = 'ramdisk'", str(e.exception))


class RunningLayoutTest(unittest.TestCase):
    flash = {"name": "flash", "expect": {"bluestore_bdev_rotational": "0", "op_shards": 8}}

    def test_the_flash_layout_matches_a_flash_osd(self):
        self.assertEqual(mismatches(self.flash, {"bluestore_bdev_rotational": "0", "op_shards": 8}), [])

    def test_an_osd_on_a_rotational_device_is_not_flash(self):
        wrong = mismatches(self.flash, {"bluestore_bdev_rotational": "1", "op_shards": 1})
        self.assertEqual(len(wrong), 2, wrong)
        self.assertIn("op_shards is 1, the layout needs 8", wrong[1])

    def test_a_value_not_reported_is_a_mismatch(self):
        self.assertEqual(len(mismatches(self.flash, {"op_shards": 8})), 1)


class DeviceConfTest(unittest.TestCase):
    def test_each_osd_gets_its_own_device_and_none_is_created(self):
        spec = NodeSpec(state_dir="/s", osds=2, block_devices=["/dev/loop3", "/dev/loop4"])
        conf = base_conf(Path("/s"), spec)
        self.assertEqual(conf["osd.0"], {"bluestore_block_path": "/dev/loop3"})
        self.assertEqual(conf["osd.1"], {"bluestore_block_path": "/dev/loop4"})
        self.assertEqual(conf["osd"]["bluestore_block_create"], "false")
        self.assertNotIn("bluestore_block_path", conf["osd"])
        self.assertNotIn("bluestore_block_size", conf["osd"])

    def test_without_devices_bluestore_makes_its_file_as_before(self):
        conf = base_conf(Path("/s"), NodeSpec(state_dir="/s"))
        self.assertEqual(conf["osd"]["bluestore_block_path"], "/s/osd/block")
        self.assertEqual(conf["osd"]["bluestore_block_create"], "true")
        self.assertFalse(any(k.startswith("osd.") for k in conf))


class LoopConfigTest(unittest.TestCase):
    def test_the_struct_has_the_kernels_size_and_layout(self):
        # struct loop_config is 304 bytes: fd, block_size, loop_info64 (232), 8 reserved u64
        self.assertEqual(LOOP_CONFIG.size, 304)
        packed = loop_config(7, 4 | 16, "/x/block-backing-0")
        self.assertEqual(int.from_bytes(packed[0:4], "little"), 7)
        self.assertEqual(int.from_bytes(packed[8 + 52:8 + 56], "little"), 20)  # lo_flags
        self.assertEqual(packed[8 + 56:8 + 56 + 18], b"/x/block-backing-0")


class ReportLayoutTest(unittest.TestCase):
    def test_the_report_names_what_the_running_osd_had(self):
        env = {"layout": {"name": "flash", "osds": {"osd.0": {"bluestore_bdev_rotational": "0", "op_shards": 8,
                                                              "op_threads": 16}}}}
        self.assertEqual(layout_seen_text(env), "the running OSD: bluestore_bdev_rotational 0, 8 op shards, "
                                                "16 op threads")

    def test_an_older_report_shows_its_metadata(self):
        self.assertEqual(layout_seen_text({"osd_metadata": {"bluestore_bdev_rotational": "1"}}),
                         "OSD device rotational: 1")


if __name__ == "__main__":
    unittest.main()
