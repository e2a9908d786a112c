//! A library file the user may choose: a Java system property handed over by the JNI layer, else
//! an environment variable (libcuda: `cuhandle.driver.path` / `CUHANDLE_DRIVER_PATH`; NVRTC:
//! `cuhandle.nvrtc.path` / `CUHANDLE_NVRTC_PATH`). Only read before the first load.
//!
//! Both choose code that runs in the process, so they are trusted configuration (docs/security.md)
//! and must be absolute: a relative value would be looked up from whatever the working directory
//! is when the library is first needed.

use std::sync::Mutex;

pub struct ConfiguredPath {
    property: Mutex<Option<String>>,
    property_name: &'static str,
    env: &'static str,
}

impl ConfiguredPath {
    pub const fn new(property_name: &'static str, env: &'static str) -> ConfiguredPath {
        ConfiguredPath { property: Mutex::new(None), property_name, env }
    }

    /// Sets (or, with `None` or an empty string, clears) the property's value.
    pub fn set(&self, path: Option<String>) {
        if let Ok(mut p) = self.property.lock() {
            *p = path.filter(|s| !s.is_empty());
        }
    }

    /// The property's value, else the environment variable's, else `None`; an error naming the
    /// setting when the value is not an absolute path.
    pub fn get(&self) -> Result<Option<String>, String> {
        let from_property = self.property.lock().ok().and_then(|p| p.clone()).map(|p| (p, format!("-D{}", self.property_name)));
        let chosen = from_property.or_else(|| std::env::var(self.env).ok().filter(|s| !s.is_empty()).map(|p| (p, self.env.to_string())));
        match chosen {
            Some((path, _)) if path.starts_with('/') => Ok(Some(path)),
            Some((path, setting)) => Err(format!(
                "{setting}={path} is not an absolute path; it chooses code to load into this process, so it must name the file \
                 from the root (a relative path would be looked up from the current working directory)"
            )),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_property_wins_and_empty_means_unset() {
        let path = ConfiguredPath::new("cuhandle.test.path", "CUHANDLE_TEST_PATH_THAT_IS_NEVER_SET");
        assert_eq!(path.get(), Ok(None));
        path.set(Some("/opt/lib.so".into()));
        assert_eq!(path.get(), Ok(Some("/opt/lib.so".to_string())));
        path.set(Some(String::new()));
        assert_eq!(path.get(), Ok(None));
    }

    /// Issue 26 (4): relative values were accepted and resolved against the working directory.
    #[test]
    fn a_relative_path_is_refused_naming_the_setting() {
        let path = ConfiguredPath::new("cuhandle.test.path", "CUHANDLE_TEST_PATH_THAT_IS_NEVER_SET");
        for relative in ["libcuda.so.1", "./libcuda.so.1", "lib/libcuda.so.1"] {
            path.set(Some(relative.into()));
            let err = path.get().expect_err(relative);
            assert!(err.contains(&format!("-Dcuhandle.test.path={relative} is not an absolute path")), "{err}");
        }
    }
}
