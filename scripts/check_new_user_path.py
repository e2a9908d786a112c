#!/usr/bin/env python3
"""A new user's first GPU tests, as README.md and docs/guide/testing.md lead there, checked end to end.

    python3 scripts/check_new_user_path.py [-Dmaven.repo.local=...]

README.md's install section shows the dependency snippets (<!-- snippet: maven-dependency -->,
<!-- snippet: gradle-groovy -->) and points to complete build files in docs/guide/starter/: pom.xml
(Maven 3.6.3+) and build.gradle (Gradle 4.4+). This checks that each file contains its README snippet
as shown (whitespace aside), copies the starter project to target/new-user/{maven,gradle} and tests it
with Debian's Maven and Gradle against the installed dev.cuhandle artifacts (scripts/test.sh installs
them first). Its two tests: SaxpyTest checks a kernel's result (@RequiresGpu(kernels = true)),
HandleLifecycleTest only copies and closes (@RequiresGpu). Each build tool, in turn:

  machine driver      both tests skipped, the reason printed (or, on a GPU, both pass)
  CPU stand-in        built by docs/guide/testing.md's commands (<!-- snippet: standin-build -->, run
                      as written in a folder that holds the clone's tests/standin-driver), which
                      export CUHANDLE_DRIVER_PATH; then `mvn test` / `gradle check`: the lifecycle test
                      passes, the kernel test is skipped: "kernels do not execute on the CPU stand-in driver"
  requireGpu          -Dcuhandle.requireGpu=true: the build fails, naming the property (on the machine's
                      driver without a GPU, and on the stand-in)
  native access       Maven only, on Java 25 where installed (/usr/lib/jvm/temurin-25-jdk-amd64, or
                      JAVA25_HOME), -DargLine=--illegal-native-access=deny: the build fails, naming
                      --enable-native-access, instead of skipping

Only -Dmaven.repo.local is passed on (to Maven and Gradle); the scenarios set cuhandle.requireGpu
themselves. Standard library only.
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_readme_snippets  # noqa: E402  (scripts/check_readme_snippets.py: README.md's snippets)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
README = os.path.join(ROOT, "README.md")
STARTER = os.path.join(ROOT, "docs", "guide", "starter")
WORK = os.path.join(ROOT, "target", "new-user")
TESTING = os.path.join(ROOT, "docs", "guide", "testing.md")
JAVA25 = os.environ.get("JAVA25_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64")

NO_GPU_SKIP = "[cuhandle] GPU tests are SKIPPED: "
STAND_IN_SKIP = "[cuhandle] GPU tests that need kernels are SKIPPED: kernels do not execute on the CPU stand-in driver"
REQUIRED = "-Dcuhandle.requireGpu=true but no CUDA GPU is usable: "
DENIED = "the JVM refused cuhandle native access"


def fail(message, output=""):
    if output:
        print(output[-8000:], file=sys.stderr)
    sys.exit(f"check_new_user_path: {message}")


def flat(text):
    return " ".join(text.split())


def check_snippets():
    """The README's snippets must appear, as shown, in the complete files it points to."""
    with open(README) as f:
        readme = f.read()
    found = check_readme_snippets.snippets(readme)   # exits naming any snippet README.md lacks
    for name, file in (("maven-dependency", "pom.xml"), ("gradle-groovy", "build.gradle")):
        with open(os.path.join(STARTER, file)) as f:
            if flat(found[name]) not in flat(f.read()):
                fail(f"docs/guide/starter/{file} does not contain README.md's {name} snippet as shown")
        if f"docs/guide/starter/{file}" not in readme:
            fail(f"README.md does not point to docs/guide/starter/{file}")
    print("check_new_user_path: README.md's Maven and Gradle snippets are in docs/guide/starter/pom.xml and build.gradle, which it points to")


def build_standin():
    """Runs testing.md's stand-in commands from the root of a clone (here: a copy of the part they
    use) and returns the CUHANDLE_DRIVER_PATH they export."""
    with open(TESTING) as f:
        m = re.search(r"<!-- snippet: standin-build -->\s*```sh\n(.*?)```", f.read(), re.DOTALL)
    if not m:
        fail("docs/guide/testing.md lacks the snippet standin-build")
    clone = os.path.join(WORK, "clone")
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "tests", "standin-driver"), os.path.join(clone, "tests", "standin-driver"),
                    ignore=shutil.ignore_patterns("*.so", "*.o"))
    script = "set -eu\n" + m.group(1) + 'printf %s "$CUHANDLE_DRIVER_PATH"\n'
    result = subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True)
    path = result.stdout.strip()
    if result.returncode != 0 or not os.path.isfile(path):
        fail(f"docs/guide/testing.md's stand-in commands failed (exit status {result.returncode}, CUHANDLE_DRIVER_PATH={path!r})",
             result.stdout + result.stderr)
    print(f"check_new_user_path: docs/guide/testing.md's stand-in commands ran as written: CUHANDLE_DRIVER_PATH={path}")
    return path


def copy_starter(name):
    folder = os.path.join(WORK, name)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(STARTER, folder, ignore=shutil.ignore_patterns("target", "build", ".gradle", "kotlin-dsl"))
    return folder


def run(command, cwd, env_extra=None):
    env = dict(os.environ)
    env.pop("CUHANDLE_DRIVER_PATH", None)
    env.update(env_extra or {})
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def maven_counts(output):
    m = re.findall(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)\s*$", output, re.MULTILINE)
    if not m:
        return None
    run_, failures, errors, skipped = (int(v) for v in m[-1])
    return run_ - failures - errors - skipped, skipped, failures + errors


def gradle_counts(output):
    def count(what):
        m = re.search(r"\[\s*(\d+) tests " + what + r"\s*\]", output)
        return int(m.group(1)) if m else 0
    if "tests successful" not in output:
        return None
    return count("successful"), count("skipped"), count("failed")


def scenario(tool, what, command, cwd, counts, env_extra, expect):
    code, output = run(command, cwd, env_extra)
    passed_skipped_failed = counts(output)
    verdict = expect(code, output, passed_skipped_failed)
    if verdict is None:
        fail(f"{tool}, {what}: unexpected result (exit status {code}, passed/skipped/failed {passed_skipped_failed})", output)
    print(f"check_new_user_path: {tool}, {what}: {verdict}", flush=True)


def skipped_or_ran(code, output, counts):
    if code == 0 and counts == (0, 2, 0) and NO_GPU_SKIP in output:
        return "both tests skipped, with " + output[output.index(NO_GPU_SKIP):].splitlines()[0].strip()
    if code == 0 and counts == (2, 0, 0) and NO_GPU_SKIP not in output:
        return "a GPU is here: both tests passed"
    return None


def standin(code, output, counts):
    if code == 0 and counts == (1, 1, 0) and STAND_IN_SKIP in output:
        return "the lifecycle test passed; the kernel test skipped with the reason (" + STAND_IN_SKIP + ")"
    return None


def loud_failure(text):
    def expect(code, output, counts):
        if code != 0 and text in output:
            line = output[output.index(text):].splitlines()[0].strip()
            return f"the build failed (exit status {code}): {line[:200]}"
        return None
    return expect


def scenario_runner(tool, base, folder, counts):
    """Runs base (whose last word is the goal or task) with extra arguments before that word."""
    def go(what, extra_args, env_extra, expect):
        scenario(tool, what, base[:-1] + extra_args + base[-1:], folder, counts, env_extra, expect)
    return go


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    repo_options = [a for a in argv[1:] if a.startswith("-Dmaven.repo.local=")]
    check_snippets()
    on_standin = {"CUHANDLE_DRIVER_PATH": build_standin()}
    tools = [
        ("Maven", ["mvn", "-B", "-ntp", "-Dstyle.color=never"] + repo_options + ["test"], copy_starter("maven"), maven_counts),
        ("Gradle", ["gradle", "--no-daemon", "--console=plain"] + repo_options + ["check"], copy_starter("gradle"), gradle_counts),
    ]
    for tool, base, folder, counts in tools:
        go = scenario_runner(tool, base, folder, counts)
        go("machine driver", [], {}, skipped_or_ran)
        go("CPU stand-in", [], on_standin, standin)
        go("CPU stand-in, -Dcuhandle.requireGpu=true", ["-Dcuhandle.requireGpu=true"], on_standin,
           loud_failure(REQUIRED + "kernels do not execute on the CPU stand-in driver"))
        go("machine driver, -Dcuhandle.requireGpu=true", ["-Dcuhandle.requireGpu=true"], {}, loud_failure_or_gpu)
    java25 = os.path.join(JAVA25, "bin", "java")
    if os.path.exists(java25):
        go = scenario_runner("Maven on Java 25", tools[0][1], tools[0][2], maven_counts)
        go("CPU stand-in, -DargLine=--illegal-native-access=deny", ["-DargLine=--illegal-native-access=deny"],
           dict(on_standin, JAVA_HOME=JAVA25), loud_failure(DENIED))
    else:
        print(f"check_new_user_path: no Java 25 at {JAVA25}: the --illegal-native-access=deny run was not made")
    print("check_new_user_path: the starter project skips, runs and fails as docs/guide/testing.md says, with Maven and Gradle")
    return 0


def loud_failure_or_gpu(code, output, counts):
    if code == 0 and counts == (2, 0, 0) and NO_GPU_SKIP not in output:
        return "a GPU is here: both tests passed"
    return loud_failure(REQUIRED)(code, output, counts)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
