//! GPU utilization, clocks, temperature and power through NVML (the `nvml` feature:
//! `nvml-wrapper`, which loads libnvidia-ml at run time). NVML absent, or a build without the
//! feature, gives [`GpuReadings::Unavailable`] with the reason, never an error.

use serde::Serialize;

/// `CUDRV_LIBNVML`: the NVML library to load instead of `libnvidia-ml.so.1` (when set and not
/// empty, read by [`crate::sys::loader::named_by`] like the other library overrides).
pub const LIBNVML_ENV: &str = "CUDRV_LIBNVML";

/// What NVML reports for the device; each figure is `None` where the device does not report it.
///
/// ```
/// use cudrv::monitor::GpuReadings;
/// let r = GpuReadings::Unavailable { reason: "NVML not found".into() };
/// assert!(serde_json::to_string(&r).unwrap().contains("\"status\":\"unavailable\""));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GpuReadings {
    /// NVML answered.
    Available {
        /// Percent of the last sample period a kernel was running.
        utilization_percent: Option<u32>,
        /// Percent of the last sample period device memory was read or written.
        memory_utilization_percent: Option<u32>,
        /// SM clock, MHz.
        sm_clock_mhz: Option<u32>,
        /// Memory clock, MHz.
        memory_clock_mhz: Option<u32>,
        /// GPU die temperature, degrees Celsius.
        temperature_c: Option<u32>,
        /// Board power draw, watts.
        power_w: Option<f64>,
        /// Enforced power limit, watts.
        power_limit_w: Option<f64>,
    },
    /// NVML could not be used; `reason` says why (not found, no such device, built without the
    /// `nvml` feature).
    Unavailable {
        /// Why.
        reason: String,
    },
}

impl GpuReadings {
    /// Whether NVML answered.
    ///
    /// ```
    /// let r = cudrv::monitor::GpuReadings::Unavailable { reason: "absent".into() };
    /// assert!(!r.is_available());
    /// ```
    pub fn is_available(&self) -> bool {
        matches!(self, GpuReadings::Available { .. })
    }
}

/// The readings for the GPU with this UUID (`GPU-xxxxxxxx-...`).
#[cfg(feature = "nvml")]
pub(crate) fn read(uuid: &str) -> GpuReadings {
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
    use nvml_wrapper::Nvml;
    use std::sync::OnceLock;

    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    let nvml = NVML.get_or_init(|| {
        let mut builder = Nvml::builder();
        let path = crate::sys::loader::named_by(LIBNVML_ENV);
        if let Some(p) = &path {
            builder.lib_path(p.as_ref());
        }
        builder.init().map_err(|e| format!("NVML not available ({e})"))
    });
    let nvml = match nvml {
        Ok(n) => n,
        Err(reason) => return GpuReadings::Unavailable { reason: reason.clone() },
    };
    let device = match nvml.device_by_uuid(uuid) {
        Ok(d) => d,
        Err(e) => {
            return GpuReadings::Unavailable {
                reason: format!("NVML does not know device {uuid} ({e})"),
            }
        }
    };
    let util = device.utilization_rates().ok();
    GpuReadings::Available {
        utilization_percent: util.as_ref().map(|u| u.gpu),
        memory_utilization_percent: util.as_ref().map(|u| u.memory),
        sm_clock_mhz: device.clock_info(Clock::SM).ok(),
        memory_clock_mhz: device.clock_info(Clock::Memory).ok(),
        temperature_c: device.temperature(TemperatureSensor::Gpu).ok(),
        power_w: device.power_usage().ok().map(|mw| f64::from(mw) / 1e3),
        power_limit_w: device.enforced_power_limit().ok().map(|mw| f64::from(mw) / 1e3),
    }
}

/// Without the `nvml` feature there are no readings.
#[cfg(not(feature = "nvml"))]
pub(crate) fn read(_uuid: &str) -> GpuReadings {
    GpuReadings::Unavailable {
        reason: "cudrv was built without the `nvml` feature".into(),
    }
}
