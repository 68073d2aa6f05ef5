//! Checks of binary module images (cubin, fatbin) before the driver reads them.
//!
//! `cuModuleLoadData` takes a pointer and no length: the driver trusts the image's own headers
//! for how far to read. A truncated file, or a header that claims more than the buffer holds,
//! would make it read past the caller's slice. So a binary image is parsed far enough to know
//! its length (ELF: the section and program header tables and every section with contents;
//! fatbin: the header's payload size and each entry's), and anything that does not fit the
//! slice is an `InvalidArgument` before the driver sees it.

use crate::error::{Error, Result};

/// ELF magic, the start of a cubin.
pub(crate) const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
/// The fatbin header's magic, little-endian.
pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// `offset + count * entry` as a usize end, or None on overflow.
fn table_end(offset: u64, count: u64, entry: u64) -> Option<usize> {
    usize::try_from(offset.checked_add(count.checked_mul(entry)?)?).ok()
}

/// The bytes a 64-bit little-endian ELF image spans, from its headers.
fn elf_len(b: &[u8]) -> std::result::Result<usize, String> {
    const HEADER: usize = 64;
    if b.len() < HEADER {
        return Err(format!("{} bytes, shorter than an ELF header ({HEADER})", b.len()));
    }
    if b[4] != 2 || b[5] != 1 {
        return Err("not a 64-bit little-endian ELF image".into());
    }
    let short = || "its ELF header is cut short".to_string();
    let phoff = u64_at(b, 0x20).ok_or_else(short)?;
    let shoff = u64_at(b, 0x28).ok_or_else(short)?;
    let phentsize = u16_at(b, 0x36).ok_or_else(short)? as u64;
    let phnum = u16_at(b, 0x38).ok_or_else(short)? as u64;
    let shentsize = u16_at(b, 0x3A).ok_or_else(short)? as u64;
    let shnum = u16_at(b, 0x3C).ok_or_else(short)? as u64;
    if shnum > 0 && shentsize < 64 {
        return Err(format!("section header entries of {shentsize} bytes (64 expected)"));
    }
    let overflow = || "its header tables overflow".to_string();
    let mut end = HEADER;
    end = end.max(table_end(phoff, phnum, phentsize).ok_or_else(overflow)?);
    let sh_end = table_end(shoff, shnum, shentsize).ok_or_else(overflow)?;
    end = end.max(sh_end);
    if sh_end > b.len() {
        return Err(format!("its section headers end at byte {sh_end}"));
    }
    for i in 0..shnum as usize {
        let at = shoff as usize + i * shentsize as usize;
        let kind = u32_at(b, at + 4).ok_or_else(short)?;
        const NOBITS: u32 = 8;
        if kind == NOBITS {
            continue;
        }
        let offset = u64_at(b, at + 0x18).ok_or_else(short)?;
        let size = u64_at(b, at + 0x20).ok_or_else(short)?;
        end = end.max(table_end(offset, 1, size).ok_or_else(overflow)?);
    }
    Ok(end)
}

/// The bytes a fatbin spans: its 16-byte header plus the payload size it declares, each entry
/// (header and padded payload) inside the payload.
fn fatbin_len(b: &[u8]) -> std::result::Result<usize, String> {
    let short = || format!("{} bytes, shorter than a fatbin header (16)", b.len());
    let header = u16_at(b, 6).ok_or_else(short)? as u64;
    let payload = u64_at(b, 8).ok_or_else(short)?;
    let end = table_end(header, 1, payload).ok_or_else(|| "its payload size overflows".to_string())?;
    if end > b.len() {
        return Ok(end);
    }
    let mut at = header as usize;
    while at < end {
        let entry_header = u32_at(b, at + 4).ok_or("an entry header is cut short")? as u64;
        let entry_payload = u64_at(b, at + 8).ok_or("an entry header is cut short")?;
        if entry_header < 16 {
            return Err(format!("an entry header of {entry_header} bytes"));
        }
        let next = table_end(at as u64 + entry_header, 1, entry_payload).ok_or("an entry's size overflows")?;
        if next > end {
            return Err(format!(
                "an entry at byte {at} ends at {next}, past the payload's end ({end})"
            ));
        }
        at = next;
    }
    Ok(end)
}

/// Checks that the binary image fits its slice; `name` goes into the error.
pub(crate) fn validate(image: &[u8], name: &str) -> Result<()> {
    let (what, len) = if image.starts_with(ELF_MAGIC) {
        ("cubin (ELF)", elf_len(image))
    } else if image.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        ("fatbin", fatbin_len(image))
    } else {
        return Ok(());
    };
    match len {
        Ok(end) if end <= image.len() => Ok(()),
        Ok(end) => Err(Error::InvalidArgument(format!(
            "module `{name}`: the {what} image's headers describe {end} bytes but only {} were given (truncated?)",
            image.len()
        ))),
        Err(why) => Err(Error::InvalidArgument(format!(
            "module `{name}`: not a valid {what} image: {why}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBIN: &[u8] = include_bytes!("../tests/data/test_kernels.sm_90.cubin");
    const FATBIN: &[u8] = include_bytes!("../tests/data/test_kernels.sm_90.fatbin");

    #[test]
    fn real_images_pass_and_span_their_files() {
        validate(CUBIN, "cubin").unwrap();
        validate(FATBIN, "fatbin").unwrap();
        assert_eq!(elf_len(CUBIN).unwrap(), CUBIN.len());
        assert_eq!(fatbin_len(FATBIN).unwrap(), FATBIN.len());
    }

    #[test]
    fn every_truncation_is_refused() {
        for image in [CUBIN, FATBIN] {
            for cut in [0, 3, 4, 10, 17, 63, 64, 100, image.len() / 2, image.len() - 1] {
                let r = validate(&image[..cut], "cut");
                // Cut to fewer than 4 bytes, the magic is gone: not a binary image at all.
                if cut < 4 {
                    assert!(r.is_ok());
                } else {
                    assert!(matches!(r, Err(Error::InvalidArgument(_))), "cut at {cut}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn lying_headers_are_refused() {
        let mut fat = FATBIN.to_vec();
        fat[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(validate(&fat, "lie").is_err());
        let mut fat = FATBIN.to_vec();
        fat[8..16].copy_from_slice(&(FATBIN.len() as u64).to_le_bytes());
        let err = validate(&fat, "lie").unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        let mut elf = CUBIN.to_vec();
        elf[0x3C..0x3E].copy_from_slice(&500u16.to_le_bytes());
        assert!(validate(&elf, "lie").is_err());
        let mut elf = CUBIN.to_vec();
        elf[0x28..0x30].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
        assert!(validate(&elf, "lie").is_err());
        let mut garbage = b"\x7fELF".to_vec();
        garbage.extend(std::iter::repeat(0xAB).take(200));
        assert!(validate(&garbage, "garbage").is_err());
    }
}
