//! Reading facts out of PTX text: kernel entry names and the ISA version.
//!
//! Shared with build.rs (included there by path), so it depends on nothing else in the crate.

/// The kernel entry names a PTX module defines (the identifiers after `.entry`).
///
/// ```
/// let ptx = ".version 8.0\n.target sm_80\n.visible .entry axpy_f32(\n.param .u64 y\n)\n{ ret; }\n";
/// assert_eq!(cudrv::ptx_info::entries(ptx), vec!["axpy_f32".to_string()]);
/// ```
pub fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line.trim_start();
            let rest = rest.strip_prefix(".visible").unwrap_or(rest).trim_start();
            let rest = rest.strip_prefix(".entry")?;
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The PTX ISA version from the module's `.version` directive, as (major, minor).
///
/// ```
/// assert_eq!(cudrv::ptx_info::isa_version(".version 8.0\n.target sm_80\n"), Some((8, 0)));
/// assert_eq!(cudrv::ptx_info::isa_version("not ptx"), None);
/// ```
pub fn isa_version(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx.lines().map(str::trim).find(|l| l.starts_with(".version"))?;
    let (major, minor) = line.strip_prefix(".version")?.trim().split_once('.')?;
    Some((major.trim().parse().ok()?, minor.trim().parse().ok()?))
}
