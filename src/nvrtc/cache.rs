//! Compiled programs in cudrv's kernel cache ([`crate::kernel_cache`]): a source compiles once per
//! machine, and a later process (or a later call) gets its PTX, cubin, log and lowered names from
//! the cache without loading libnvrtc.
//!
//! The key hashes what the program says: the source, its name, the in-memory headers, the
//! options, the name expressions, whether a cubin was asked for, and cudrv's version. Not the
//! NVRTC version, nor headers read from disk (the CUDA include directories are searched the same
//! way each time): after upgrading NVRTC or changing such a header, `cudrv cache clear`. An entry is the cache's own
//! checksummed file; inside it, the fields below, each length-prefixed, decoded with bounds
//! checks, so a damaged entry is a miss (and is rewritten by the compile that follows), never a
//! wrong program.

use super::{Compiled, Program};
use crate::kernel_cache::CacheKey;

/// The key of `program`.
pub(super) fn key(program: &Program) -> CacheKey {
    let options = &program.options;
    let mut parts: Vec<&[u8]> = vec![
        program.source.as_bytes(),
        program.name.as_deref().unwrap_or("").as_bytes(),
    ];
    let counts = [
        program.headers.len() as u64,
        options.len() as u64,
        program.name_expressions.len() as u64,
        u64::from(program.cubin),
    ];
    let counts: Vec<u8> = counts.iter().flat_map(|c| c.to_le_bytes()).collect();
    parts.push(&counts);
    for (name, contents) in &program.headers {
        parts.push(name.as_bytes());
        parts.push(contents.as_bytes());
    }
    parts.extend(options.iter().map(|o| o.as_bytes()));
    parts.extend(program.name_expressions.iter().map(|e| e.as_bytes()));
    CacheKey::for_parts("nvrtc", &parts)
}

/// An entry's bytes.
pub(super) fn encode(c: &Compiled) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    put(&c.ptx);
    put(c.cubin.as_deref().unwrap_or(&[]));
    put(&[u8::from(c.cubin.is_some())]);
    put(c.log.as_bytes());
    put(&(c.lowered.len() as u64).to_le_bytes());
    for (expression, name) in &c.lowered {
        put(expression.as_bytes());
        put(name.as_bytes());
    }
    out
}

/// The program an entry holds, or `None` when the bytes are not one.
pub(super) fn decode(bytes: &[u8]) -> Option<Compiled> {
    let mut at = 0usize;
    let mut take = || -> Option<&[u8]> {
        let len = u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?) as usize;
        let start = at + 8;
        let field = bytes.get(start..start.checked_add(len)?)?;
        at = start + len;
        Some(field)
    };
    let ptx = take()?.to_vec();
    let cubin = take()?.to_vec();
    let has_cubin = take()? == [1];
    let log = String::from_utf8(take()?.to_vec()).ok()?;
    let count = u64::from_le_bytes(take()?.try_into().ok()?);
    let mut lowered = Vec::new();
    for _ in 0..count {
        let expression = String::from_utf8(take()?.to_vec()).ok()?;
        let name = String::from_utf8(take()?.to_vec()).ok()?;
        lowered.push((expression, name));
    }
    if at != bytes.len() || ptx.last() != Some(&0) {
        return None;
    }
    Some(Compiled {
        ptx,
        cubin: has_cubin.then_some(cubin),
        log,
        lowered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Compiled {
        Compiled {
            ptx: b".version 8.0\n.entry k\n\0".to_vec(),
            cubin: Some(b"\x7fELF....".to_vec()),
            log: "warning: unused".into(),
            lowered: vec![("scale<float>".into(), "_Z5scaleIfEvPT_".into())],
        }
    }

    #[test]
    fn entries_round_trip() {
        let c = sample();
        let d = decode(&encode(&c)).unwrap();
        assert_eq!((d.ptx(), d.cubin(), d.log()), (c.ptx(), c.cubin(), c.log()));
        assert_eq!(d.lowered_name("scale<float>"), Some("_Z5scaleIfEvPT_"));
        let plain = Compiled {
            cubin: None,
            lowered: Vec::new(),
            ..sample()
        };
        assert!(decode(&encode(&plain)).unwrap().cubin().is_none());
    }

    #[test]
    fn damaged_entries_are_misses() {
        let bytes = encode(&sample());
        for cut in [0, 7, 8, 20, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        let mut huge = bytes;
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge).is_none());
    }

    #[test]
    fn keys_follow_everything_the_output_depends_on() {
        let p = Program::new("__global__ void k() {}");
        let base = key(&p);
        assert_eq!(base, key(&p.clone()));
        assert_ne!(base, key(&p.clone().option("--fmad=false")));
        assert_ne!(base, key(&p.clone().name("k.cu")));
        assert_ne!(base, key(&p.clone().header("a.h", "")));
        assert_ne!(base, key(&p.clone().name_expression("k")));
        assert_ne!(base, key(&p.clone().cubin()));
        assert_ne!(base, key(&Program::new("__global__ void k2() {}")));
    }
}
