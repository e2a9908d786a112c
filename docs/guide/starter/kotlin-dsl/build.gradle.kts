// A complete build.gradle.kts (Kotlin DSL) for a project that uses cuhandle and tests with JUnit 5.
// Needs Gradle 5.0 or newer (Kotlin DSL 1.0; Gradle 4.x ignores this file). Put it beside src/ in place of
// ../build.gradle (one build file per project). Not built by CI, whose Gradle (Debian 12's 4.4.1) has no
// Kotlin DSL.
plugins { java }

java {
    sourceCompatibility = JavaVersion.VERSION_11
    targetCompatibility = JavaVersion.VERSION_11
}

repositories { mavenLocal(); mavenCentral() }
dependencies {
    implementation("dev.cuhandle:cuhandle:0.1.0-SNAPSHOT")
    testImplementation("dev.cuhandle:cuhandle-junit:0.1.0-SNAPSHOT")
}
dependencies {
    testImplementation("org.junit.jupiter:junit-jupiter-api:5.14.1")
    testRuntimeOnly("org.junit.jupiter:junit-jupiter-engine:5.14.1")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher:1.14.1")
}

tasks.test {
    useJUnitPlatform()
    // Java 24+ warns at cuhandle's System.load without it; Java 11 rejects the flag.
    if (JavaVersion.current() >= JavaVersion.VERSION_17) jvmArgs("--enable-native-access=ALL-UNNAMED")
    // -Dcuhandle.requireGpu=true on Gradle's command line reaches the tests.
    systemProperties(System.getProperties().filterKeys { it.toString().startsWith("cuhandle.") }.mapKeys { it.key.toString() })
}
