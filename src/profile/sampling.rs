//! Which launches the profiler times: every one (exact figures, two event records per launch),
//! or each kernel's first few and then one in `n` at random (the host cost divided by about
//! `n`, figures estimated from the timed launches; counts stay exact).

/// Launches of each kernel timed before sampling starts: a kernel launched a few times is
/// still seen, and its first (often slower) launches are in its figures.
///
/// ```
/// assert_eq!(cudrv::profile::FIRST_TIMED, 8);
/// ```
pub const FIRST_TIMED: u64 = 8;

/// Which launches the profiler times ([`super::Profiler::set_sampling`]).
///
/// ```
/// use cudrv::profile::Sampling;
/// assert_eq!(Sampling::parse("1"), Ok(Some(Sampling::Every)));
/// assert_eq!(Sampling::parse("1/16"), Ok(Some(Sampling::OneIn(16))));
/// assert_eq!(Sampling::parse("0"), Ok(None));
/// assert!(Sampling::parse("1/zero").is_err());
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Every launch (the default).
    #[default]
    Every,
    /// Each kernel's first [`FIRST_TIMED`] launches, then each launch with probability `1/n`
    /// (random, so a kernel launched in a repeating pattern is not always or never timed).
    OneIn(u32),
}

impl Sampling {
    /// Reads a `CUDRV_PROFILE` value: `1` times every launch, `1/N` one launch in `N`; `0`,
    /// `off` or an empty value leave profiling off (`Ok(None)`); anything else is an error
    /// that says what is accepted.
    ///
    /// ```
    /// use cudrv::profile::Sampling;
    /// assert_eq!(Sampling::parse("1/1"), Ok(Some(Sampling::Every)));
    /// assert!(Sampling::parse("yes").unwrap_err().contains("1/N"));
    /// ```
    pub fn parse(value: &str) -> Result<Option<Sampling>, String> {
        let v = value.trim();
        match v {
            "" | "0" | "off" => return Ok(None),
            "1" | "on" => return Ok(Some(Sampling::Every)),
            _ => {}
        }
        let n = v
            .strip_prefix("1/")
            .and_then(|n| n.trim().parse::<u32>().ok())
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                format!("`{value}` is not a profiling setting: 1 (every launch), 1/N (one launch in N, N >= 1) or 0")
            })?;
        Ok(Some(if n == 1 { Sampling::Every } else { Sampling::OneIn(n) }))
    }

    /// Whether a kernel's `launch`-th launch (from 1) is timed; `random` is a fresh random
    /// number.
    pub(crate) fn times(self, launch: u64, random: u64) -> bool {
        match self {
            Sampling::Every => true,
            Sampling::OneIn(n) => launch <= FIRST_TIMED || random % u64::from(n.max(1)) == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_n_times_the_first_launches_then_about_one_in_n() {
        let s = Sampling::OneIn(16);
        let mut rng = crate::selftest::Rng::new(0x1234_5678_9abc_def0);
        assert!((1..=FIRST_TIMED).all(|i| s.times(i, 1)));
        let timed = (FIRST_TIMED + 1..FIRST_TIMED + 160_001)
            .filter(|&i| s.times(i, rng.next_u64()))
            .count();
        assert!((9_000..11_000).contains(&timed), "{timed}");
        assert!((1..1000).all(|i| Sampling::Every.times(i, 7)));
    }
}
