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
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

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

/// The temporary file being written right now, as a leaked C string, for
/// [`remove_pending_temp`] (a signal handler) to remove; null when none.
static PENDING: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// A temporary file next to the destination: registered in [`PENDING`] while it exists, and
/// removed when dropped unless it was renamed into place ([`Temp::persist`]).
struct Temp {
    path: PathBuf,
    file: Option<File>,
}

impl Temp {
    /// Creates a new temporary file next to `path`.
    fn create(path: &Path) -> Result<Self, Error> {
        for _ in 0..16 {
            let tmp = temp_path(path);
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    if let Ok(c) = std::ffi::CString::new(tmp.as_os_str().as_encoded_bytes()) {
                        let old = PENDING.swap(c.into_raw(), Ordering::SeqCst);
                        free_c_string(old);
                    }
                    return Ok(Self { path: tmp, file: Some(file) });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(ErrorKind::AlreadyExists, "cannot create a temporary file next to it"))
    }

    /// Renames the file over `dest`; on failure it is removed when `self` drops.
    fn persist(mut self, dest: &Path) -> Result<(), Error> {
        drop(self.file.take());
        std::fs::rename(&self.path, dest)?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        drop(self.file.take());
        free_c_string(PENDING.swap(std::ptr::null_mut(), Ordering::SeqCst));
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Frees a C string leaked into [`PENDING`] (null is fine).
fn free_c_string(p: *mut libc::c_char) {
    if !p.is_null() {
        // SAFETY: every non-null pointer in PENDING came from `CString::into_raw`, and the swap
        // that returned it took it out, so it is freed once.
        drop(unsafe { std::ffi::CString::from_raw(p) });
    }
}

/// Removes the temporary file [`write_atomic`] is writing right now, if any: for a signal
/// handler about to end the process, so Ctrl-C never leaves a `.tmp` file behind. Only
/// async-signal-safe calls (an atomic swap and `unlink`); the path's memory is left to the
/// process's end.
pub fn remove_pending_temp() {
    let p = PENDING.swap(std::ptr::null_mut(), Ordering::SeqCst);
    #[cfg(unix)]
    if !p.is_null() {
        // SAFETY: `p` is a valid NUL-terminated path (from `CString::into_raw`), never freed
        // once swapped out here.
        unsafe { libc::unlink(p) };
    }
}

/// Where a write to `path` must go: `path` itself, or the file a symbolic link at `path` points
/// to (so the link stays a link); a link to nothing is refused.
pub fn resolve_destination(path: &Path) -> Result<PathBuf, Error> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            let target = std::fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
            Error::new(e.kind(), format!("it is a symbolic link to {target}, which cannot be reached: {e}"))
        }),
        _ => Ok(path.to_path_buf()),
    }
}

/// Checks, without changing anything at `path`, that [`write_atomic`] could write there: the
/// directory exists and takes new files, and `path` is absent or a regular file (not a
/// directory, FIFO or device). Opens nothing at `path` itself, so a FIFO cannot block.
pub fn check_destination(path: &Path) -> Result<(), Error> {
    if path.as_os_str().is_empty() {
        return Err(Error::new(ErrorKind::InvalidInput, "the path is empty"));
    }
    let path = &resolve_destination(path)?;
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(Error::new(ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind_of(&meta))));
        }
        Ok(meta) if meta.permissions().readonly() => {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                "it is read-only; make it writable (chmod u+w) or choose another path",
            ));
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
    Temp::create(path)
        .map(drop)
        .map_err(|e| Error::new(e.kind(), format!("cannot create files in directory {}: {e}", dir.display())))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced to disk,
/// then renamed over `path`. On any error, and on Ctrl-C ([`remove_pending_temp`]), the
/// temporary file is removed and `path` is as it was. A symbolic link at `path` is followed (its
/// target is replaced, the link kept), a replaced file keeps its permissions, and a read-only
/// file is refused.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    check_destination(path)?;
    let path = &resolve_destination(path)?;
    let mut tmp = Temp::create(path)?;
    let file = tmp.file.as_mut().expect("a new temporary file is open");
    if let Ok(meta) = std::fs::metadata(path) {
        file.set_permissions(meta.permissions())?;
    }
    file.write_all(bytes)?;
    file.sync_all()?;
    tmp.persist(path)?;
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

    #[cfg(unix)]
    #[test]
    fn links_are_followed_modes_kept_and_read_only_files_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch_dir("links");
        let target = dir.join("target.json");
        let link = dir.join("link.json");
        write_atomic(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600, "the mode is kept");
        // A link to nothing, and a read-only file, are refused; nothing changes.
        let dangling = dir.join("dangling.json");
        std::os::unix::fs::symlink(dir.join("missing/x.json"), &dangling).unwrap();
        assert!(write_atomic(&dangling, b"x").unwrap_err().to_string().contains("symbolic link"));
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(write_atomic(&target, b"x").unwrap_err().to_string().contains("read-only"));
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
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
