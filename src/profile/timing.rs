//! How the profiler reads kernel times: from CUPTI's activity records (the driver writes each
//! kernel's start and end as it runs; about a microsecond or less of host time per launch, no
//! event), or from a pair of events recorded around each launch (no library beyond libcuda;
//! two driver calls per timed launch).

/// `CUDRV_PROFILE_TIMING=cupti|events|auto` chooses [`Timing`] for every context.
pub const TIMING_ENV: &str = "CUDRV_PROFILE_TIMING";

/// How launches are timed ([`super::Profiler::set_timing`]).
///
/// ```
/// use cudrv::profile::Timing;
/// assert_eq!(Timing::parse("cupti"), Ok(Timing::Cupti));
/// assert_eq!(Timing::parse(""), Ok(Timing::Auto));
/// assert!(Timing::parse("clock").unwrap_err().contains("events"));
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// CUPTI where libcupti loads and takes the activity calls, events otherwise (the default).
    #[default]
    Auto,
    /// CUPTI's kernel records; enabling the profiler fails where CUPTI cannot be used.
    Cupti,
    /// An event pair around each timed launch.
    Events,
}

impl Timing {
    /// Reads a `CUDRV_PROFILE_TIMING` value.
    ///
    /// ```
    /// assert_eq!(cudrv::profile::Timing::parse(" Events "), Ok(cudrv::profile::Timing::Events));
    /// ```
    pub fn parse(value: &str) -> Result<Timing, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Timing::Auto),
            "cupti" => Ok(Timing::Cupti),
            "events" => Ok(Timing::Events),
            _ => Err(format!("`{value}` is not a profiler timing: cupti, events or auto")),
        }
    }

    /// The setting from `CUDRV_PROFILE_TIMING` (unset or unreadable: `Auto`, with a warning for
    /// an unknown value).
    pub(crate) fn from_env() -> Timing {
        let Ok(v) = std::env::var(TIMING_ENV) else {
            return Timing::Auto;
        };
        Timing::parse(&v).unwrap_or_else(|e| {
            eprintln!("cudrv: {TIMING_ENV}: {e}; using auto");
            Timing::Auto
        })
    }
}
