//! Reading the files a scenario names: bounded in size, and only regular files, so that a path
//! to a device (`/dev/zero`), a pipe or a socket is refused instead of read for ever.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest scenario file read: eight times the largest generated scenario (10 000 UEs, 8 MB);
/// the built-in scenarios are under 10 KiB. A file this size can still ask the parser for
/// gigabytes (63 MiB of `[],` took 4.3 GB), so its text is bounded too, before it is parsed
/// ([`crate::prescan`]).
pub const MAX_SCENARIO_FILE_BYTES: u64 = 64 << 20;

/// Largest flow-size distribution (CDF) file read.
pub const MAX_CDF_FILE_BYTES: u64 = 1 << 20;

/// The text of the regular file at `path`, of at most `max_bytes` bytes, or why not.
///
/// The file is opened without blocking (a FIFO with no writer would otherwise hold `open` for
/// ever) and its type is checked on the open handle, so that it cannot be swapped between the
/// check and the read; at most `max_bytes + 1` bytes are read whatever the file claims its size
/// to be.
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<String, String> {
    // O_NONBLOCK (Linux's value; the crate runs where the kernel backend does) affects only
    // special files: reads of a regular file block as usual.
    const O_NONBLOCK: i32 = 0o4000;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(kind.into());
    }
    if meta.len() > max_bytes {
        return Err(format!("{} bytes; at most {max_bytes}", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("more than {max_bytes} bytes"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mpsched-files-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_small_regular_file_is_read() {
        let p = scratch("small").join("a.toml");
        std::fs::write(&p, "x = 1\n").unwrap();
        assert_eq!(read_bounded(&p, 100).unwrap(), "x = 1\n");
    }

    #[test]
    fn a_file_over_the_bound_is_refused_by_its_size() {
        let p = scratch("big").join("a.toml");
        std::fs::write(&p, vec![b'#'; 101]).unwrap();
        assert_eq!(read_bounded(&p, 100).unwrap_err(), "101 bytes; at most 100");
    }

    #[test]
    fn devices_directories_and_fifos_are_refused_without_blocking() {
        assert_eq!(
            read_bounded(Path::new("/dev/zero"), 100).unwrap_err(),
            "not a regular file"
        );
        assert_eq!(read_bounded(Path::new("/tmp"), 100).unwrap_err(), "a directory");
        let fifo = scratch("fifo").join("pipe");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert_eq!(read_bounded(&fifo, 100).unwrap_err(), "not a regular file");
        }
    }

    #[test]
    fn binary_content_is_refused_as_not_text() {
        let p = scratch("bin").join("a.toml");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        assert!(read_bounded(&p, 100).unwrap_err().starts_with("not UTF-8 text"));
    }
}
