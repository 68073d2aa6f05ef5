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

/// Whether the module's `.target` is architecture-specific (`sm_90a`, ...): code that runs on
/// exactly that architecture, which the JIT must be asked for explicitly.
///
/// ```
/// assert!(cudrv::ptx_info::accelerated_target(".version 8.0\n.target sm_90a\n.address_size 64\n"));
/// assert!(!cudrv::ptx_info::accelerated_target(".version 8.0\n.target sm_80\n"));
/// ```
pub fn accelerated_target(ptx: &str) -> bool {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ']).find(|w| w.starts_with("sm_")))
        .is_some_and(|sm| sm.ends_with('a'))
}

/// The byte ranges of every kernel definition in `ptx`, with the kernel's name: from the start
/// of the line that holds `.entry NAME` to the end of the line that closes its body (or of its
/// `;` when it is only a declaration). Braces are counted outside `//` and `/* */` comments.
fn entry_spans(ptx: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let bytes = ptx.as_bytes();
    let mut spans = Vec::new();
    let mut line_start = 0;
    while line_start < bytes.len() {
        let line_end = ptx[line_start..].find('\n').map_or(bytes.len(), |i| line_start + i);
        let line = &ptx[line_start..line_end];
        let name = entries(line).into_iter().next();
        let Some(name) = name else {
            line_start = line_end + 1;
            continue;
        };
        // Scan from the entry line to the end of its body.
        let (mut i, mut depth, mut opened) = (line_start, 0usize, false);
        let end = loop {
            if i >= bytes.len() {
                break bytes.len();
            }
            match bytes[i] {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = ptx[i..].find('\n').map_or(bytes.len(), |k| i + k);
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = ptx[i + 2..].find("*/").map_or(bytes.len(), |k| i + 2 + k + 2);
                    continue;
                }
                b'{' => {
                    depth += 1;
                    opened = true;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        break i + 1;
                    }
                }
                b';' if !opened => break i + 1,
                _ => {}
            }
            i += 1;
        };
        let end = ptx[end..].find('\n').map_or(bytes.len(), |k| end + k + 1);
        spans.push((name, line_start..end));
        line_start = end;
    }
    spans
}

/// The module `ptx` with only the kernel `name` defined: every other kernel's definition is
/// left out, everything at module scope (the header, declarations, device functions) is kept.
/// `None` when `ptx` defines no kernel `name`.
///
/// The driver JIT-compiles a whole module when it is loaded, so loading one kernel from a
/// module of many costs the compile time of all of them; a module holding one kernel costs
/// only its own. Kernels that share state through module-scope variables must stay together
/// (each module gets its own copy of them), so this suits modules whose kernels share none.
///
/// ```
/// let ptx = ".version 8.0\n.target sm_80\n\
///            .visible .entry a()\n{\n\tret;\n}\n\
///            .visible .entry b()\n{\n\tret;\n}\n";
/// let one = cudrv::ptx_info::entry_module(ptx, "b").unwrap();
/// assert_eq!(cudrv::ptx_info::entries(&one), vec!["b".to_string()]);
/// assert!(one.starts_with(".version 8.0\n.target sm_80\n"));
/// assert!(cudrv::ptx_info::entry_module(ptx, "c").is_none());
/// ```
pub fn entry_module(ptx: &str, name: &str) -> Option<String> {
    let spans = entry_spans(ptx);
    if !spans.iter().any(|(n, _)| n == name) {
        return None;
    }
    let mut out = String::with_capacity(ptx.len() / spans.len().max(1) + 4096);
    let mut at = 0;
    for (n, range) in &spans {
        if n != name {
            out.push_str(&ptx[at..range.start]);
            at = range.end;
        }
    }
    out.push_str(&ptx[at..]);
    Some(out)
}

/// Whether the PTX has tensor-core instructions (`mma`, `wgmma`). The driver's JIT linker
/// compiles such kernels measurably slower code than `cuModuleLoadData` does (the linker treats
/// its input as relocatable device code), so cudrv's kernel cache, which needs the linker's
/// cubin, leaves them to the driver (docs/PERFORMANCE.md, "First use of a kernel").
///
/// ```
/// assert!(cudrv::ptx_info::uses_tensor_cores("\twgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 ..."));
/// assert!(cudrv::ptx_info::uses_tensor_cores("\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ..."));
/// assert!(!cudrv::ptx_info::uses_tensor_cores("\tfma.rn.f32 %f1, %f2, %f3, %f4;"));
/// ```
pub fn uses_tensor_cores(ptx: &str) -> bool {
    ptx.lines().any(|l| {
        let l = l.trim_start();
        let l = l.strip_prefix('@').map_or(l, |rest| {
            rest.split_once(char::is_whitespace).map_or(rest, |x| x.1).trim_start()
        });
        l.starts_with("mma.") || l.starts_with("wgmma.")
    })
}
