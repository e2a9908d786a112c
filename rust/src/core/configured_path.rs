//! A library file the user may choose: a Java system property handed over by the JNI layer, else
//! an environment variable (libcuda: `cuhandle.driver.path` / `CUHANDLE_DRIVER_PATH`; NVRTC:
//! `cuhandle.nvrtc.path` / `CUHANDLE_NVRTC_PATH`). Only read before the first load.

use std::sync::Mutex;

pub struct ConfiguredPath {
    property: Mutex<Option<String>>,
    env: &'static str,
}

impl ConfiguredPath {
    pub const fn new(env: &'static str) -> ConfiguredPath {
        ConfiguredPath { property: Mutex::new(None), env }
    }

    /// Sets (or, with `None` or an empty string, clears) the property's value.
    pub fn set(&self, path: Option<String>) {
        if let Ok(mut p) = self.property.lock() {
            *p = path.filter(|s| !s.is_empty());
        }
    }

    /// The property's value, else the environment variable's, else `None`.
    pub fn get(&self) -> Option<String> {
        let from_property = self.property.lock().ok().and_then(|p| p.clone());
        from_property.or_else(|| std::env::var(self.env).ok().filter(|s| !s.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_property_wins_and_empty_means_unset() {
        let path = ConfiguredPath::new("CUHANDLE_TEST_PATH_THAT_IS_NEVER_SET");
        assert_eq!(path.get(), None);
        path.set(Some("/opt/lib.so".into()));
        assert_eq!(path.get().as_deref(), Some("/opt/lib.so"));
        path.set(Some(String::new()));
        assert_eq!(path.get(), None);
    }
}
