//! Files that never lose data: destinations checked before any work, writes that replace a
//! file only once the whole new content is on disk, and reads bounded in size.
//!
//! [`write_atomic`] writes to a temporary file in the destination's directory, syncs it and
//! renames it over the destination, so the path holds either the old file or the whole new one,
//! whatever happens (full disk, a signal, a crash). [`check_destination`] finds out up front
//! whether that will work, so a long run is not wasted on an unwritable path. [`read_bounded`]
//! reads only regular files (never a FIFO or device, which could block or never end) up to a
//! size limit.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The directory a file at `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What a non-regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// A fresh temporary path next to `path` (same directory, so a rename is atomic).
fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_dir(path).join(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

/// Creates a new temporary file next to `path`.
fn create_temp(path: &Path) -> Result<(PathBuf, File), Error> {
    for _ in 0..16 {
        let tmp = temp_path(path);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::new(ErrorKind::AlreadyExists, "cannot create a temporary file next to it"))
}

/// Checks, without changing anything at `path`, that [`write_atomic`] could write there: the
/// directory exists and takes new files, and `path` is absent or a regular file (not a
/// directory, FIFO or device). Opens nothing at `path` itself, so a FIFO cannot block.
pub fn check_destination(path: &Path) -> Result<(), Error> {
    if path.as_os_str().is_empty() {
        return Err(Error::new(ErrorKind::InvalidInput, "the path is empty"));
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(Error::new(ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind_of(&meta))));
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let dir = parent_dir(path);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::new(ErrorKind::InvalidInput, format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(Error::new(e.kind(), format!("directory {}: {e}", dir.display()))),
    }
    let (tmp, file) = create_temp(path)
        .map_err(|e| Error::new(e.kind(), format!("cannot create files in directory {}: {e}", dir.display())))?;
    drop(file);
    std::fs::remove_file(&tmp)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced to disk,
/// then renamed over `path`. On any error the temporary file is removed and `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    check_destination(path)?;
    let (tmp, mut file) = create_temp(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable; a directory that cannot be synced is no error.
    if let Ok(dir) = File::open(parent_dir(path)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a regular file of at most `limit` bytes; refuses directories, FIFOs and devices
/// before opening them, and stops reading past the limit (a file that grows is caught too).
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind_of(&meta))));
    }
    let too_big = |size: u64| {
        Error::new(ErrorKind::InvalidData, format!("it is {size} bytes or more; the limit is {limit} bytes"))
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    File::open(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("elbow-files-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn atomic_write_replaces_whole_or_not_at_all() {
        let dir = scratch_dir("atomic");
        let path = dir.join("m.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        // Only the file itself is left: no temporary files.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A directory in the way: refused, nothing changes.
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(write_atomic(&sub, b"x").unwrap_err().to_string().contains("directory"));
        assert!(check_destination(&dir.join("missing/m.json")).is_err());
        assert!(check_destination(Path::new("")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn full_disk_keeps_the_old_file() {
        // /dev/full is a device: refused before anything is written.
        assert!(write_atomic(Path::new("/dev/full"), b"x").unwrap_err().to_string().contains("device"));
        assert!(check_destination(Path::new("/proc/version")).is_err());
    }

    #[test]
    fn bounded_reads() {
        let dir = scratch_dir("bounded");
        let path = dir.join("big");
        std::fs::write(&path, vec![b'a'; 100]).unwrap();
        assert_eq!(read_bounded(&path, 100).unwrap().len(), 100);
        assert!(read_bounded(&path, 99).unwrap_err().to_string().contains("limit is 99"));
        assert!(read_bounded(&dir, 99).unwrap_err().to_string().contains("directory"));
        #[cfg(target_os = "linux")]
        assert!(read_bounded(Path::new("/dev/zero"), 99).unwrap_err().to_string().contains("device"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
