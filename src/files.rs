//! Files that never lose data: destinations checked before any work, writes that replace a
//! file only once the whole new content is on disk, and reads bounded in size.
//!
//! [`write_atomic`] (and [`AtomicFile`], for a file written in pieces) writes to a temporary
//! file in the destination's directory, syncs it and renames it over the destination, so the
//! path holds either the old file or the whole new one, whatever happens (full disk, a
//! file-size limit, a signal, a crash). The temporary file is removed on every error and on
//! Ctrl-C, SIGTERM or SIGHUP ([`remove_pending_temp`]); what a SIGKILL or a crash leaves behind
//! is removed by the next write to the same path ([`sweep_stale_temps`]).
//! [`check_destination`] finds out up front whether a write will work, so a long run is not
//! wasted on an unwritable path. [`read_bounded`] reads only regular files (never a FIFO or
//! device, which could block or never end) up to a size limit; [`open_bounded`] opens one for
//! reading as a stream, under the same limit.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Error, ErrorKind, Read, Write};
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

/// A fresh temporary path next to `path` (same directory, so a rename is atomic):
/// `.NAME.tmp-PID-N`, the pattern [`sweep_stale_temps`] knows.
fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_dir(path).join(format!("{}{}-{n}", temp_prefix(path), std::process::id()))
}

/// The start of the name of every temporary file next to `path`: `.NAME.tmp-`.
fn temp_prefix(path: &Path) -> String {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.tmp-")
}

/// How long a temporary file of ours may sit unchanged before a later write to the same path
/// takes it for debris even though a process of its id runs (the id may have been reused): one
/// hour.
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the temporary files that earlier writes to `dest` left behind when their process was
/// killed (SIGKILL, a crash, a power cut): regular files named `.NAME.tmp-PID-N` whose process
/// is gone, or that have not changed for [`STALE_TEMP_AGE`]; never this process's own, nor any
/// other name.
pub fn sweep_stale_temps(dest: &Path) {
    let prefix = temp_prefix(dest);
    let Ok(entries) = std::fs::read_dir(parent_dir(dest)) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, n)) = name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|r| r.split_once('-')) else {
            continue;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let Some(pid) = (digits(pid) && digits(n)).then(|| pid.parse::<u32>().ok()).flatten() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let old = meta.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= STALE_TEMP_AGE);
        if old || !process_alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether a process with this id runs (or may: without a way to ask, yes).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        if pid <= 0 {
            return false;
        }
        // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// How many temporary files can be registered for removal on a signal at once.
const SLOTS: usize = 8;

/// The temporary files being written right now, as leaked C strings, for
/// [`remove_pending_temp`] (a signal handler) to remove; null slots are free. A file that finds
/// no free slot is still removed on every ordinary path, and by [`sweep_stale_temps`] after a
/// signal.
static PENDING: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// A temporary file next to the destination: registered in [`PENDING`] while it exists, and
/// removed when dropped unless it was renamed into place ([`Temp::persist`]).
struct Temp {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    /// Its slot in [`PENDING`], if it found one.
    slot: Option<usize>,
}

impl Temp {
    /// Creates a new temporary file next to `path`.
    fn create(path: &Path) -> Result<Self, Error> {
        for _ in 0..16 {
            let tmp = temp_path(path);
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    let slot = register(&tmp);
                    return Ok(Self { path: tmp, file: Some(BufWriter::new(file)), slot });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(ErrorKind::AlreadyExists, "cannot create a temporary file next to it"))
    }

    /// The open file.
    fn file(&mut self) -> &mut BufWriter<File> {
        self.file.as_mut().expect("open until persisted or dropped")
    }

    /// Writes out the buffer, syncs the file to disk and renames it over `dest`; on failure it
    /// is removed when `self` drops.
    fn persist(mut self, dest: &Path) -> Result<(), Error> {
        let file = self.file.take().expect("open until persisted");
        let file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.path, dest)?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        if let Some(slot) = self.slot {
            free_c_string(PENDING[slot].swap(std::ptr::null_mut(), Ordering::SeqCst));
        }
    }
}

/// Puts `path` in a free slot of [`PENDING`]; `None` when every slot is taken.
fn register(path: &Path) -> Option<usize> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?.into_raw();
    for (i, slot) in PENDING.iter().enumerate() {
        if slot.compare_exchange(std::ptr::null_mut(), c, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return Some(i);
        }
    }
    free_c_string(c);
    None
}

/// Frees a C string leaked into [`PENDING`] (null is fine).
fn free_c_string(p: *mut libc::c_char) {
    if !p.is_null() {
        // SAFETY: every non-null pointer in PENDING came from `CString::into_raw`, and the swap
        // that returned it took it out, so it is freed once.
        drop(unsafe { std::ffi::CString::from_raw(p) });
    }
}

/// Removes the temporary files being written right now, if any: for a signal handler about to
/// end the process, so Ctrl-C never leaves a `.tmp` file behind. Only async-signal-safe calls
/// (atomic swaps and `unlink`); the paths' memory is left to the process's end.
pub fn remove_pending_temp() {
    for slot in &PENDING {
        let p = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        #[cfg(unix)]
        if !p.is_null() {
            // SAFETY: `p` is a valid NUL-terminated path (from `CString::into_raw`), never freed
            // once swapped out here.
            unsafe { libc::unlink(p) };
        }
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

/// A file written in pieces and put in place whole: a temporary file in the destination's
/// directory takes the writes ([`Write`], buffered), and [`AtomicFile::commit`] syncs it and
/// renames it over the destination. Dropped without a commit (an error, a run that failed), it
/// is removed and the destination is as it was; on a signal [`remove_pending_temp`] removes it.
/// A symbolic link at the destination is followed (its target is replaced, the link kept), a
/// replaced file keeps its permissions, and a read-only file is refused. Creating one first
/// removes the debris of earlier writes to the same path ([`sweep_stale_temps`]).
pub struct AtomicFile {
    dest: PathBuf,
    temp: Temp,
}

impl AtomicFile {
    /// Starts a new file for `path` (checked as [`check_destination`] does); nothing changes at
    /// `path` until [`AtomicFile::commit`].
    pub fn create(path: &Path) -> Result<Self, Error> {
        check_destination(path)?;
        let dest = resolve_destination(path)?;
        sweep_stale_temps(&dest);
        let mut temp = Temp::create(&dest)?;
        if let Ok(meta) = std::fs::metadata(&dest) {
            temp.file().get_ref().set_permissions(meta.permissions())?;
        }
        Ok(Self { dest, temp })
    }

    /// Puts the whole file in place: writes out the buffer, syncs, renames it over the
    /// destination and syncs the directory.
    pub fn commit(self) -> Result<(), Error> {
        self.temp.persist(&self.dest)?;
        // Make the rename itself durable; a directory that cannot be synced is no error.
        if let Ok(dir) = File::open(parent_dir(&self.dest)) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.temp.file().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.temp.file().flush()
    }
}

/// Writes `bytes` to `path` atomically with an [`AtomicFile`]: `path` holds either the old file
/// or the whole new one, whatever happens (full disk, a file-size limit, a signal, a crash).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Reads a regular file of at most `limit` bytes; refuses directories, FIFOs and devices
/// before opening them, and stops reading past the limit (a file that grows is caught too).
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let size = std::fs::metadata(path)?.len();
    let mut bytes = Vec::with_capacity(size.min(limit) as usize);
    open_bounded(path, limit)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens a regular file of at most `limit` bytes for reading as a stream, buffered: refuses
/// directories, FIFOs and devices before opening them, and a file above the limit; a read past
/// the limit (a file that grew) is an error.
pub fn open_bounded(path: &Path, limit: u64) -> Result<std::io::BufReader<Bounded<File>>, Error> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind_of(&meta))));
    }
    if meta.len() > limit {
        return Err(too_big(meta.len(), limit));
    }
    Ok(std::io::BufReader::new(Bounded { inner: File::open(path)?, read: 0, limit }))
}

/// The error of a file above its size limit.
fn too_big(size: u64, limit: u64) -> Error {
    Error::new(ErrorKind::InvalidData, format!("it is {size} bytes or more; the limit is {limit} bytes"))
}

/// A reader that fails once more than `limit` bytes have come through it ([`open_bounded`]).
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    read: u64,
    limit: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit is enough to tell that the file is too big.
        let room = (self.limit + 1).saturating_sub(self.read);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        self.read += got as u64;
        if self.read > self.limit {
            return Err(too_big(self.read, self.limit));
        }
        Ok(got)
    }
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

    #[test]
    fn stale_temporary_files_are_swept_by_the_next_write() {
        let dir = scratch_dir("sweep");
        let path = dir.join("c.jsonl");
        let plant = |name: String| {
            let p = dir.join(name);
            std::fs::write(&p, b"debris").unwrap();
            p
        };
        // A process id past any system's limit runs nowhere; process 1 always runs.
        let dead = plant(format!(".c.jsonl.tmp-{}-0", i32::MAX - 1));
        let running = plant(".c.jsonl.tmp-1-0".into());
        let old = plant(".c.jsonl.tmp-1-1".into());
        let hours_ago = std::time::SystemTime::now() - 2 * STALE_TEMP_AGE;
        File::options().write(true).open(&old).unwrap().set_modified(hours_ago).unwrap();
        let not_ours = plant(".c.jsonl.tmp-x-0".into());
        let other_path = plant(format!(".d.jsonl.tmp-{}-0", i32::MAX - 1));
        // Only checking changes nothing.
        check_destination(&path).unwrap();
        assert!(dead.exists() && old.exists());
        write_atomic(&path, b"new").unwrap();
        assert!(!dead.exists(), "a dead process's temporary file is removed");
        assert!(!old.exists(), "an hour-old temporary file is removed");
        assert!(running.exists(), "a running process's fresh one is kept");
        assert!(not_ours.exists() && other_path.exists(), "other names are kept");
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_written_in_pieces_appears_whole_or_not_at_all() {
        let dir = scratch_dir("pieces");
        let path = dir.join("c.jsonl");
        write_atomic(&path, b"old").unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new ").unwrap();
        f.write_all(b"content").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"old", "nothing changes before the commit");
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"old", "a file dropped uncommitted changes nothing");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "and leaves no temporary file");
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new content").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new content");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
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
        // A stream opened within the limit fails once the file has grown past it.
        let mut input = open_bounded(&path, 100).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"grown").unwrap();
        let mut all = Vec::new();
        assert!(input.read_to_end(&mut all).unwrap_err().to_string().contains("limit is 100"));
        assert!(open_bounded(&path, 100).unwrap_err().to_string().contains("limit is 100"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
