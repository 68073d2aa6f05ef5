//! The layering rule of the architecture guide, checked on the source: `src/sys` (the bindings
//! and the loader) refers to nothing of the crate outside `src/sys`.

use std::fs;
use std::path::Path;

/// Every `crate::` path in `text` that does not start with `crate::sys`.
fn outside_sys_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if !after.starts_with("sys") {
                found.push(format!("line {}: {}", i + 1, line.trim()));
                break;
            }
            rest = after;
        }
    }
    found
}

#[test]
fn sys_refers_to_nothing_above_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sys");
    let mut offenders = Vec::new();
    let mut read = 0;
    for entry in fs::read_dir(&dir).expect("src/sys exists") {
        let path = entry.expect("readable directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("readable source file");
        read += 1;
        for hit in outside_sys_paths(&text) {
            offenders.push(format!("{}: {hit}", path.display()));
        }
    }
    assert!(
        read >= 3,
        "expected mod.rs, loader.rs and the generated files in {}",
        dir.display()
    );
    assert!(
        offenders.is_empty(),
        "src/sys reaches above itself:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_sees_paths_outside_sys() {
    assert_eq!(
        outside_sys_paths("use crate::sys::loader;\n$crate::sys::x"),
        Vec::<String>::new()
    );
    assert_eq!(outside_sys_paths("use crate::error::Error;").len(), 1);
    assert_eq!(outside_sys_paths("x: $crate::Result<()>").len(), 1);
}
