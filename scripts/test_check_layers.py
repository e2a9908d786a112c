#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small planted trees: an upward import (plain and grouped), JNI in
the core, a driver entry point called outside core/driver/ and a module on no floor are caught; imports down, tests, comments and strings are not.
scripts/test.sh runs it before the check itself. Standard library only."""

import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_layers  # noqa: E402


class CheckLayersTest(unittest.TestCase):
    def tree(self, files):
        root = pathlib.Path(tempfile.mkdtemp(prefix="check-layers-"))
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    def test_imports_down_tests_comments_and_strings_pass(self):
        src = self.tree({
            "core/graph.rs": "use crate::core::error::Error;\nuse crate::core::{driver, handle::Handle};\n",
            "core/error.rs": "// crate::core::graph is mentioned only here\nconst S: &str = \"crate::core::graph\";\n"
                             "#[cfg(test)]\nmod tests {\n    use crate::core::graph::Graph;\n    fn f() { let _ = { 1 }; }\n}\n",
            "jni/graph.rs": "use crate::core::graph;\nuse jni::objects::JObject;\n",
        })
        self.assertEqual(check_layers.violations(src), [])

    def test_a_planted_upward_import_fails(self):
        src = self.tree({"core/error.rs": "use crate::core::graph::Graph;\n"})
        found = check_layers.violations(src)
        self.assertEqual(len(found), 1)
        self.assertIn("core::error (floor 0, base) uses core::graph (floor 4, operations): imports must point down", found[0])

    def test_an_upward_import_inside_a_group_fails(self):
        src = self.tree({"core/driver/mod.rs": "use crate::core::{error::Error, memory::{pool, device}};\n"})
        found = check_layers.violations(src)
        self.assertEqual(len(found), 1, found)
        self.assertIn("uses core::memory", found[0])

    def test_jni_in_the_core_fails(self):
        for text in ("use jni::objects::JObject;\n", "fn f(e: jni::EnvUnowned) {}\n", "use crate::jni::throw;\n"):
            src = self.tree({"core/context.rs": text})
            found = check_layers.violations(src)
            self.assertEqual(len(found), 1, text)
            self.assertIn("the core must not depend on JNI types", found[0])

    def test_a_driver_entry_point_outside_the_driver_floor_fails(self):
        planted = "fn f(d: &Driver) { let rc = unsafe { (d.api.cuCtxSynchronize)() }; }\n"
        src = self.tree({
            "core/event.rs": planted,
            "jni/probe.rs": "fn g(d: &Driver) { let api = &d.api; unsafe { (api.cuInit)(0) }; }\n",
            "core/driver/mod.rs": planted,  # the floor itself may
            "core/graph.rs": "// (api.cuGraphLaunch) in a comment\nfn h(d: &Driver) { unsafe { d.cuGraphLaunch(e, s) }; }\n",
        })
        found = check_layers.violations(src)
        self.assertEqual(len(found), 2, found)
        self.assertIn("core::event calls the driver entry point cuCtxSynchronize", found[0])
        self.assertIn("jni::jni calls the driver entry point cuInit", found[1])

    def test_a_module_on_no_floor_fails(self):
        found = check_layers.violations(self.tree({"core/brand_new.rs": "fn f() {}\n"}))
        self.assertEqual(len(found), 1)
        self.assertIn("module core::brand_new is on no floor", found[0])

    def test_the_real_tree_passes(self):
        src = pathlib.Path(__file__).resolve().parent.parent / "rust" / "src"
        self.assertEqual(check_layers.violations(src), [])


if __name__ == "__main__":
    unittest.main()
