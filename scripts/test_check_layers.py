#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small planted trees: an upward import (plain and grouped), JNI in
the core, a driver entry point called outside core/driver/ and a module on no floor are caught; imports down,
tests, comments and strings are not. And of scripts/check_java_layers.py: a lower floor's class naming a higher
one (in a source or a template) and a floor listing a class with no source are caught; names in comments,
Javadoc, strings and characters are not.
scripts/test.sh runs it before the checks themselves. Standard library only."""

import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_java_layers  # noqa: E402
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


class CheckJavaLayersTest(unittest.TestCase):
    def package(self, files):
        """A folder with `files` ({file name: text}) and an empty class for every other class the floors list."""
        folder = pathlib.Path(tempfile.mkdtemp(prefix="check-java-layers-"))
        for name in check_java_layers.FLOOR_OF:
            (folder / f"{name}.java").write_text(f"final class {name} {{}}\n", encoding="utf-8")
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        return folder

    def test_names_down_and_names_that_are_not_code_pass(self):
        folder = self.package({
            "NativeResource.java": "/** Base of {@link Handle} and {@link DeviceBuffer}. */\nabstract class NativeResource {\n"
                                   "    final NativeObject state = null; // Capture.noteUse(handle, this) was here\n"
                                   "    /* Graph */ String s = \"Handle.close\"; char quote = '\\\"'; String t = \"Library\";\n}\n",
            "Handle.java": "final class Handle extends NativeResource { Capture capture; NativeApi api; }\n",
            "Capture.java": "final class Capture { Handle handle; Graph graph; }\n",
            "Graph.java": "final class Graph { }\n",
            "Library.java": "final class Library { }\n",
            "package-info.java": "/** Handle */\npackage dev.cuhandle;\n",
        })
        self.assertEqual(check_java_layers.violations([folder]), [])

    def test_a_planted_upward_reference_fails(self):
        folder = self.package({
            "NativeResource.java": "abstract class NativeResource {\n    void close(String op) { Capture.refuseOnThisThread(op); }\n}\n",
            "Capture.java": "final class Capture { }\n",
        })
        found = check_java_layers.violations([folder])
        self.assertEqual(len(found), 1, found)
        self.assertIn("NativeResource (floor 1, lifecycle) names Capture (floor 3, api): references must point down", found[0])

    def test_a_class_of_a_template_counts_and_a_lower_floor_may_not_name_it(self):
        templates = pathlib.Path(tempfile.mkdtemp(prefix="check-java-layers-templates-"))
        (templates / "Blas.java.template").write_text("public final class Blas {\n//#for type in float double\n//#end\n}\n", encoding="utf-8")
        folder = self.package({"NativeApi.java": "final class NativeApi { static void f() { Blas.class.getName(); } }\n"})
        found = check_java_layers.violations([folder, templates])
        self.assertEqual(len(found), 1, found)
        self.assertIn("NativeApi (floor 2, native) names Blas (floor 3, api)", found[0])

    def test_a_floor_listing_a_class_without_a_source_fails(self):
        folder = self.package({})
        (folder / "Parking.java").unlink()
        found = check_java_layers.violations([folder])
        self.assertEqual(len(found), 1, found)
        self.assertIn("class Parking is on floor 0 (base) of scripts/check_java_layers.py but has no source", found[0])

    def test_the_real_package_passes(self):
        main = pathlib.Path(__file__).resolve().parent.parent / "java" / "src" / "main"
        folders = [main / "java" / "dev" / "cuhandle", main / "templates" / "dev" / "cuhandle"]
        self.assertEqual(check_java_layers.violations(folders), [])


if __name__ == "__main__":
    unittest.main()
