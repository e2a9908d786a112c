#!/usr/bin/env python3
"""Tests of scripts/check_docs.py on small made-up pages and logs (run by scripts/test.sh)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_docs  # noqa: E402

ANCHORS = """ctx_set_current_same_ns 26.0
cublas_create_destroy_median_us 178.5
library_load_ptx_ms 16.423
d2d_copy_GBps 4218.0 (median 0.509 ms)
primary_ctx_id 1
"""
BENCH = """c,handle,activation_driver_floor,1,70.253,ns
cuhandle,handle,activation_overhead,2,146.932,ns
cuhandle,handle,create_close,5,1.370,us
CHECK cost.create_destroy_median_us: 289.0 us (expected tens to hundreds of microseconds) ... PASS
[module-loading] load_mib=512.0
cuhandle,activation_overhead_ns_over_bare_call,1000000,0,74.1,0
"""
LOGS = {"runs/anchors.txt": ANCHORS, "runs/bench.log": BENCH}
DEFINITIONS = "\n[anchors]: runs/anchors.txt\n[bench]: runs/bench.log\n"


def check(page):
    return check_docs.check_figures(page + DEFINITIONS, LOGS.get, "page.md")


class FigureCheckTest(unittest.TestCase):
    def test_figures_from_the_linked_log_pass_rounded_to_the_precision_written(self):
        self.assertEqual([], check("The pair took 178.5 µs, a PTX load 16.4 ms ([anchors])."))
        self.assertEqual([], check("Activation 147 ns against a floor of 70.3 ns; create+close 1.37 µs ([bench])."))
        self.assertEqual([], check("- a list item: 26 ns ([anchors])"))
        self.assertEqual([], check("Copies ran at 4218 GB/s, 0.51 ms each ([anchors])."))
        self.assertEqual([], check("Loading took 512 MiB ([bench])."))

    def test_both_ends_of_a_range_are_checked(self):
        self.assertEqual([], check("Floor 70–147 ns ([bench])."))
        failures = check("Floor 57–147 ns ([bench]).")
        self.assertEqual(1, len(failures), failures)
        self.assertIn("57 ns", failures[0])

    def test_a_figure_no_linked_log_holds_fails(self):
        failures = check("cublasCreate+cublasDestroy took 147 µs ([anchors]).")
        self.assertEqual(1, len(failures), failures)
        self.assertIn("147 us is in none of the logs linked there (runs/anchors.txt)", failures[0])
        self.assertIn("page.md:1", failures[0])

    def test_the_unit_must_match(self):
        self.assertEqual(1, len(check("The pair took 178.5 ns ([anchors]).")))
        self.assertEqual(1, len(check("The floor was 70.253 us ([bench]).")))

    def test_more_precision_than_the_log_has_fails(self):
        self.assertEqual(1, len(check("The pair took 178.50 µs ([anchors]).")))
        self.assertEqual(1, len(check("The load took 16.5 ms ([anchors]).")))

    def test_a_figure_only_another_paragraphs_log_holds_fails(self):
        failures = check("A PTX load takes 16.4 ms ([bench]).\n\nThe anchors: [anchors].")
        self.assertEqual(1, len(failures), failures)

    def test_a_paragraph_with_figures_must_link_a_log(self):
        failures = check("A PTX load takes 16.4 ms.")
        self.assertEqual(1, len(failures), failures)
        self.assertIn("links no log", failures[0])

    def test_links_must_point_to_committed_logs(self):
        failures = check("See [x](runs/missing.log): nothing measured.")
        self.assertEqual(1, len(failures), failures)
        self.assertIn("not a committed log", failures[0])

    def test_code_blocks_numbers_without_units_and_ids_are_not_figures(self):
        page = "```\nsleep 5 s\n```\nRun 2026-12-01 on driver 580 (CUDA 13.0), 100,000 cycles, 2^28 floats, sm_90."
        self.assertEqual([], check(page))

    def test_inline_links_count_too(self):
        self.assertEqual([], check("The pair took 178.5 µs ([log](runs/anchors.txt))."))

    def test_log_units_come_from_suffixes_keys_and_csv_unit_columns(self):
        figures = check_docs.log_figures(ANCHORS + BENCH)
        self.assertIn("178.5", figures["us"])
        self.assertIn("0.509", figures["ms"])
        self.assertIn("4218.0", figures["GB/s"])
        self.assertIn("70.253", figures["ns"])
        self.assertIn("289.0", figures["us"])
        self.assertIn("512.0", figures["MiB"])
        self.assertIn("74.1", figures["ns"], "a unit inside a CSV key")
        self.assertNotIn("1", figures.get("ns", []), "primary_ctx_id 1 has no unit")


# The outside names the citation check must refuse, assembled from parts so that this file itself
# cites nothing a reader of the repository cannot open (the project's rules are in docs/design.md).
FIGURES_MD = "FIGURES" + ".md"
DESIGN_MD = "DESIGN" + ".md"
PATTERNS_MD = "PATTERNS" + ".md"
SHARED_DIR = ".." + "/shared/"
DESIGN_WORD = "DES" + "IGN"
SEED_003 = "seed " + "003"


class CitationCheckTest(unittest.TestCase):
    def test_files_outside_the_repository_may_not_be_cited(self):
        files = [
            ("README.md", f"Figures are in {FIGURES_MD}."),
            ("rust/src/a.rs", f"// rules H1-H4 of {DESIGN_MD}"),
            ("scripts/x.sh", f"cp {SHARED_DIR}anchors/anchors.cu out/"),
            ("java/A.java", f" * see {PATTERNS_MD}"),
            ("docs/handles.md", "The rules are in docs/design.md."),
            ("docs/runs/bench.log", f"== /work{SHARED_DIR[2:]}anchors/{FIGURES_MD} (a log quotes what it ran)"),
        ]
        failures = check_docs.check_citations(files)
        self.assertEqual(4, len(failures), failures)
        self.assertTrue(failures[0].startswith(f"README.md:1: cites '{FIGURES_MD}'"), failures[0])
        self.assertTrue(any(f.startswith(f"scripts/x.sh:1: cites '{SHARED_DIR}'") for f in failures), failures)

    def test_design_wordings_that_point_outside_are_citations(self):
        files = [
            ("java/pom.xml", f"<!-- {DESIGN_WORD}: tested on Java 17 and 25 -->"),
            ("docs/handles.md", f"the article on loading ({SEED_003}) says"),
            ("java/B.java", " * the seed 0x6e6f6e and docs/design.md are fine"),
        ]
        failures = check_docs.check_citations(files)
        self.assertEqual(2, len(failures), failures)


DESIGN_PAGE = "# Design\n\n### H1 Current context\n### H2 No current context\n### H3 Explicit\n### L3 Stream order\n"


class RuleCheckTest(unittest.TestCase):
    def test_ranges_and_lists_expand(self):
        self.assertEqual(["H1", "H2", "H3", "L3"], check_docs.expand_rules("H1-H3, L3"))
        self.assertEqual(["L1", "L2", "C1"], check_docs.expand_rules("L1–L2 and C1"))

    def test_cited_rules_must_be_defined_in_the_design_page(self):
        files = [
            ("A.java", " * Binds (rules H1-H3 of docs/design.md); frees in stream order (rule L3)."),
            ("B.java", " * rule\n * Z9 of docs/design.md"),  # wrapped across comment lines
            ("CTest.java", "    void h4_restoresTheCallersContext() {"),
        ]
        failures = check_docs.check_rules(files, DESIGN_PAGE)
        self.assertEqual(2, len(failures), failures)
        self.assertTrue(failures[0].startswith("B.java:1: cites rule Z9"), failures[0])
        self.assertTrue(failures[1].startswith("CTest.java:1: cites rule H4"), failures[1])

    def test_a_rule_of_another_document_is_refused(self):
        failures = check_docs.check_rules([("x.rs", "//! rule H1 of another contract")], DESIGN_PAGE)
        self.assertEqual(1, len(failures), failures)
        self.assertIn("the project's rules are in docs/design.md", failures[0])


class LinkCheckTest(unittest.TestCase):
    TRACKED = {"README.md", "docs/design.md", "docs/guide/kernels.md", "java/src/test/java/dev/cuhandle/GraphGpuTest.java"}
    PAGES = {"docs/design.md": "# Design\n\n## The handle (H1–H12)\n### L3 `close()` in stream order\n"}

    def check(self, path, text):
        return check_docs.check_links([(path, text)], self.TRACKED, self.PAGES.get)

    def test_links_to_tracked_files_folders_and_headings_pass(self):
        text = ("[design](docs/design.md#the-handle-h1h12), [L3](docs/design.md#l3-close-in-stream-order), "
                "[guides](docs/guide), [web](https://example.com), `[not](a-link)`\n```\n[in](code.md)\n```\n")
        self.assertEqual([], self.check("README.md", text))
        self.assertEqual([], self.check("docs/guide/kernels.md", "[test](../../java/src/test/java/dev/cuhandle/GraphGpuTest.java)"))

    def test_a_moved_file_or_a_missing_heading_fails(self):
        failures = self.check("docs/guide/kernels.md", "[test](../../java/src/test/java/dev/cuhandle/gpu/GraphGpuTest.java)\n"
                              "[rule](../design.md#h9-streams)\n[up](../../../outside.md)")
        self.assertEqual(3, len(failures), failures)
        self.assertIn("not a tracked file or folder", failures[0])
        self.assertIn("has no heading with the anchor #h9-streams", failures[1])
        self.assertIn("leaves the repository", failures[2])


class CommandPathCheckTest(unittest.TestCase):
    TRACKED = {"README.md", "tests/standin-driver/README.md", "tests/standin-driver/state.c", "tests/standin-driver/memory.c",
               "scripts/test.sh", "java/pom.xml"}

    def check(self, text):
        return check_docs.check_command_paths([("docs/guide/testing.md", text)], self.TRACKED)

    def test_a_missing_file_in_a_shell_block_is_caught(self):
        text = "```sh\ncc -shared -o libcuda-standin.so tests/standin-driver/cuda_standin.c\n```\n"
        failures = self.check(text)
        self.assertEqual(1, len(failures), failures)
        self.assertIn("docs/guide/testing.md:2: the command names tests/standin-driver/cuda_standin.c", failures[0])

    def test_existing_paths_globs_folders_and_cd_pass(self):
        text = ("```bash\n(cd tests/standin-driver && cc -o $PWD/libcuda-standin.so *.c state.c)\n"
                "scripts/test.sh -f java/pom.xml   # java/target/standin is a build output\n"
                "ls java/target/surefire-reports tests/standin-driver/*.c \"$PWD/tests/standin-driver\"\n```\n")
        self.assertEqual([], self.check(text))

    def test_a_cd_moves_where_relative_paths_are_looked_up(self):
        failures = self.check("```sh\ncd tests/standin-driver\ncc standin-driver/state.c\n```\n")
        self.assertEqual(1, len(failures), failures)
        self.assertIn("after cd tests/standin-driver", failures[0])

    def test_other_languages_and_missing_globs(self):
        self.assertEqual([], self.check("```java\nnew File(\"tests/nothing/here.c\");\n```\n"))
        failures = self.check("```\ncc tests/standin-driver/*.cu\n```\n")
        self.assertEqual(1, len(failures), failures)


class ConfigurationCheckTest(unittest.TestCase):
    def test_every_setting_the_library_reads_is_listed(self):
        files = [
            ("java/src/main/java/dev/cuhandle/A.java", 'static final String P = "cuhandle.pool.enabled"; String Q = "cuhandle.new.knob";'),
            ("rust/src/core/b.rs", 'const ENV: &str = "CUHANDLE_NVRTC_PATH"; // and CUHANDLE_TEST_PATH_THAT_IS_NEVER_SET'),
            ("java/src/test/java/dev/cuhandle/T.java", '"cuhandle.standIn"'),
        ]
        failures = check_docs.check_configuration(files, "| `cuhandle.pool.enabled` |\n| `CUHANDLE_NVRTC_PATH` |")
        self.assertEqual(["java/src/main/java/dev/cuhandle/A.java: reads cuhandle.new.knob, which docs/guide/configuration.md does not list"], failures)


if __name__ == "__main__":
    unittest.main()
