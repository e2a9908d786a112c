//! Which architecture NVRTC compiles for, and whether the result is machine code or PTX.
//!
//! Machine code (SASS, a cubin from `-arch=sm_XY`) loads without any JIT work, so it is the first
//! choice; but an NVRTC only knows the architectures that existed when it was released (11.8 stops
//! at sm_90). For a newer device, PTX for the newest virtual architecture NVRTC knows
//! (`compute_XY`) still runs: PTX is forward compatible, and the driver JIT-compiles it for the
//! device when the library is loaded.

use crate::core::error::{Error, Result, CUDA_ERROR_NOT_SUPPORTED};

/// What NVRTC produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Machine code for one real architecture (`sm_XY`), from `nvrtcGetCUBIN`.
    Cubin,
    /// PTX for a virtual architecture (`compute_XY`), from `nvrtcGetPTX`.
    Ptx,
}

/// An architecture to compile for, e.g. `sm_90`, `compute_80` or `sm_90a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Compute capability as NVRTC numbers it: 10 * major + minor (90 for 9.0, 100 for 10.0).
    pub number: i32,
    /// An architecture-specific suffix (`a` or `f`, CUDA 12+), or empty.
    pub suffix: String,
    pub output: Output,
}

impl Target {
    /// `sm_90`, `compute_90`, `sm_90a`.
    pub fn name(&self) -> String {
        let prefix = match self.output {
            Output::Cubin => "sm",
            Output::Ptx => "compute",
        };
        format!("{prefix}_{}{}", self.number, self.suffix)
    }

    /// The NVRTC option that selects it.
    pub fn option(&self) -> String {
        format!("--gpu-architecture={}", self.name())
    }

    /// Parses `sm_XY[a|f]` or `compute_XY[a|f]`, without checking that NVRTC supports it.
    pub fn parse(name: &str) -> Result<Target> {
        let bad = || {
            Error::invalid_argument(format!(
                "architecture '{name}' is not of the form sm_XY or compute_XY (e.g. sm_90 for machine code for compute capability 9.0, compute_90 for PTX)"
            ))
        };
        let (output, rest) = if let Some(rest) = name.strip_prefix("sm_") {
            (Output::Cubin, rest)
        } else if let Some(rest) = name.strip_prefix("compute_") {
            (Output::Ptx, rest)
        } else {
            return Err(bad());
        };
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let (number, suffix) = rest.split_at(digits);
        if !(2..=3).contains(&digits) || !matches!(suffix, "" | "a" | "f") {
            return Err(bad());
        }
        let number = number.parse::<i32>().map_err(|_| bad())?;
        Ok(Target { number, suffix: suffix.to_string(), output })
    }
}

/// "35, 37, 50, ..., 90".
fn list(supported: &[i32]) -> String {
    supported.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// An architecture the caller named: it must be one this NVRTC supports.
pub fn explicit(name: &str, supported: &[i32], nvrtc_version: &str) -> Result<Target> {
    let target = Target::parse(name)?;
    if !supported.contains(&target.number) {
        return Err(Error::invalid_argument(format!(
            "NVRTC {nvrtc_version} cannot compile for {name}; it supports the architectures {} (as sm_XY or compute_XY)",
            list(supported)
        )));
    }
    Ok(target)
}

/// The target for code that must run on devices of the given compute capabilities (10 * major +
/// minor each):
/// - machine code for the lowest of them when NVRTC supports it and all devices share its major
///   version (a cubin for X.y runs on every X.z with z >= y), unless `ptx` asks for PTX;
/// - otherwise PTX for the newest architecture NVRTC supports that is not newer than the lowest
///   device, which the driver JIT-compiles for each device (mixed generations, or devices newer
///   than this NVRTC).
pub fn for_devices(capabilities: &[i32], supported: &[i32], ptx: bool, nvrtc_version: &str) -> Result<Target> {
    let Some(&lowest) = capabilities.iter().min() else {
        return Err(Error::invalid_argument("no device to compile for"));
    };
    let one_major = capabilities.iter().all(|&c| c / 10 == lowest / 10);
    if !ptx && one_major && supported.contains(&lowest) {
        return Ok(Target { number: lowest, suffix: String::new(), output: Output::Cubin });
    }
    match supported.iter().copied().filter(|&s| s <= lowest).max() {
        Some(number) => Ok(Target { number, suffix: String::new(), output: Output::Ptx }),
        None => Err(Error::cuda(
            CUDA_ERROR_NOT_SUPPORTED,
            "choosing an architecture for NVRTC",
            format!(
                "compute capability {}.{} is older than every architecture NVRTC {nvrtc_version} supports ({})",
                lowest / 10,
                lowest % 10,
                list(supported)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NVRTC 11.8's nvrtcGetSupportedArchs answers.
    const NVRTC_11_8: &[i32] = &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
    /// What an NVRTC 12.8 answers (Maxwell to Blackwell).
    const NVRTC_12_8: &[i32] = &[50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120];

    fn name(t: Result<Target>) -> String {
        t.expect("a target").name()
    }

    #[test]
    fn a_supported_device_gets_machine_code_for_exactly_its_architecture() {
        assert_eq!(name(for_devices(&[90], NVRTC_11_8, false, "11.8")), "sm_90");
        assert_eq!(name(for_devices(&[70], NVRTC_11_8, false, "11.8")), "sm_70");
        assert_eq!(name(for_devices(&[86], NVRTC_11_8, false, "11.8")), "sm_86");
        assert_eq!(name(for_devices(&[120], NVRTC_12_8, false, "12.8")), "sm_120");
    }

    #[test]
    fn a_device_newer_than_nvrtc_gets_ptx_of_the_newest_architecture_nvrtc_knows() {
        // Blackwell (10.0, 12.0) with NVRTC 11.8: compute_90, JIT-compiled by the driver.
        assert_eq!(name(for_devices(&[100], NVRTC_11_8, false, "11.8")), "compute_90");
        assert_eq!(name(for_devices(&[120], NVRTC_11_8, false, "11.8")), "compute_90");
        // A capability between two known ones: the newest not newer than the device.
        assert_eq!(name(for_devices(&[110], NVRTC_12_8, false, "12.8")), "compute_101");
    }

    #[test]
    fn devices_of_one_major_version_share_the_lowest_ones_machine_code() {
        assert_eq!(name(for_devices(&[86, 80], NVRTC_11_8, false, "11.8")), "sm_80");
        assert_eq!(name(for_devices(&[90, 90], NVRTC_11_8, false, "11.8")), "sm_90");
    }

    #[test]
    fn mixed_generations_get_ptx_of_the_lowest() {
        assert_eq!(name(for_devices(&[90, 80], NVRTC_11_8, false, "11.8")), "compute_80");
        assert_eq!(name(for_devices(&[70, 100, 90], NVRTC_11_8, false, "11.8")), "compute_70");
    }

    #[test]
    fn ptx_can_be_asked_for_a_supported_device() {
        let t = for_devices(&[90], NVRTC_11_8, true, "11.8").expect("target");
        assert_eq!((t.name(), t.output, t.option()), ("compute_90".to_string(), Output::Ptx, "--gpu-architecture=compute_90".to_string()));
    }

    #[test]
    fn a_device_older_than_every_supported_architecture_is_not_supported() {
        let err = for_devices(&[37], NVRTC_12_8, false, "12.8").expect_err("Kepler with NVRTC 12");
        assert_eq!(err.cuda_code(), Some(CUDA_ERROR_NOT_SUPPORTED));
        assert!(err.to_string().contains("compute capability 3.7 is older than every architecture NVRTC 12.8 supports (50, 52"), "{err}");
        assert!(for_devices(&[], NVRTC_11_8, false, "11.8").is_err());
    }

    #[test]
    fn explicit_architectures_are_parsed_and_checked_against_nvrtc() {
        let sm = explicit("sm_70", NVRTC_11_8, "11.8").expect("sm_70");
        assert_eq!((sm.number, sm.output, sm.option()), (70, Output::Cubin, "--gpu-architecture=sm_70".to_string()));
        let compute = explicit("compute_70", NVRTC_11_8, "11.8").expect("compute_70");
        assert_eq!((compute.number, compute.output), (70, Output::Ptx));
        assert_eq!(name(explicit("sm_90a", NVRTC_12_8, "12.8")), "sm_90a");
        assert_eq!(name(explicit("compute_100f", NVRTC_12_8, "12.8")), "compute_100f");
        let err = explicit("sm_100", NVRTC_11_8, "11.8").expect_err("11.8 stops at 9.0").to_string();
        assert!(err.contains("NVRTC 11.8 cannot compile for sm_100") && err.contains("89, 90"), "{err}");
    }

    #[test]
    fn malformed_architecture_names_are_refused() {
        for bad in ["", "sm90", "sm_", "sm_9", "sm_1000", "sm_90b", "compute90", "SM_90", "sm_x0", "gfx90a", "sm_90 "] {
            let err = Target::parse(bad).expect_err(bad);
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad}: {err}");
            assert!(err.to_string().contains("not of the form sm_XY or compute_XY"), "{err}");
        }
    }
}
