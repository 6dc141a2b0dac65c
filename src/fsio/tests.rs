use super::*;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;

use super::faults::FAIL_AT;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_new_file_takes_the_umask_and_a_replaced_one_keeps_its_mode() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("a.txt");
    write_file(&p, b"one").unwrap();
    // The test process's umask: whatever it is, the new file is 0666 less it.
    let m = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    rustix::process::umask(m);
    assert_eq!(mode(&p), 0o666 & !m.bits());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_file(&p, b"two").unwrap();
    assert_eq!(mode(&p), 0o640);
    assert_eq!(std::fs::read(&p).unwrap(), b"two");
    // Nothing but the file is left in the directory.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

#[test]
fn devices_fifos_and_links_are_refused_and_left_as_they_were() {
    let d = tempfile::tempdir().unwrap();
    let err = write_file(Path::new("/dev/null"), b"x").unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device_like());
    let fifo = d.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert!(write_file(&fifo, b"x").is_err());
    // Reading a FIFO never blocks: refused at once.
    assert!(read(&fifo, 10).is_err());
    let target = d.path().join("target");
    std::fs::write(&target, b"keep").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = write_file(&link, b"x").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

trait CharDev {
    fn is_char_device_like(&self) -> bool;
}
impl CharDev for std::fs::FileType {
    fn is_char_device_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_char_device()
    }
}

#[test]
fn a_tree_never_enters_a_linked_directory_and_fails_whole() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("main.tf"), b"theirs").unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("terraform")).unwrap();
    std::fs::write(out.join("README.md"), b"old readme").unwrap();
    let mut t = Tree::new(&out, true);
    t.put("README.md", b"new readme".to_vec());
    t.put("terraform/main.tf", b"ours".to_vec());
    let err = t.commit().unwrap_err();
    assert!(err.path.ends_with("terraform/main.tf"), "{err}");
    assert_eq!(std::fs::read(elsewhere.join("main.tf")).unwrap(), b"theirs");
    assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"old readme");
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_failed_rename_puts_back_the_very_files_that_were_there() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir_all(out.join("helm")).unwrap();
    std::fs::write(out.join("README.md"), b"old").unwrap();
    std::fs::set_permissions(
        out.join("README.md"),
        std::fs::Permissions::from_mode(0o604),
    )
    .unwrap();
    std::fs::write(out.join("helm/old.yaml"), b"removed, then back").unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&out.join("README.md"));
    // Every step but the last swaps; the last fails, after the README was swapped in, a
    // new file and directory made and an old file removed.
    let mut t = Tree::new(&out, true);
    t.put("README.md", b"new".to_vec());
    t.put("kueue/kueue.yaml", b"new".to_vec());
    t.put("serving/values.yaml", b"new".to_vec());
    t.remove("helm/old.yaml");
    FAIL_AT.with(|f| f.set(4));
    let err = t.commit().unwrap_err();
    FAIL_AT.with(|f| f.set(0));
    assert!(err.path.ends_with("helm/old.yaml"), "{err}");
    assert!(
        !err.to_string().contains(".gpuplan-"),
        "no temporary name: {err}"
    );
    assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"old");
    assert_eq!(mode(&out.join("README.md")), 0o604);
    assert_eq!(
        inode(&out.join("README.md")),
        before,
        "the very file, not a copy"
    );
    assert_eq!(
        std::fs::read(out.join("helm/old.yaml")).unwrap(),
        b"removed, then back"
    );
    assert_eq!(
        names(&out),
        ["README.md", "helm"],
        "the directories the set made are gone"
    );
    assert_eq!(names(&out.join("helm")), ["old.yaml"]);
}

#[test]
fn removals_take_only_regular_files_and_emptied_directories() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir_all(out.join("karpenter")).unwrap();
    std::fs::write(out.join("karpenter/karpenter.yaml"), b"old").unwrap();
    let mut t = Tree::new(&out, true);
    t.put("README.md", b"x".to_vec());
    t.remove("karpenter/karpenter.yaml");
    t.remove("never/was.yaml");
    t.commit().unwrap();
    assert!(!out.join("karpenter").exists());
    assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"x");
}

#[test]
fn pipes_are_read_where_a_person_hands_one_over() {
    let (r, mut w) = std::io::pipe().unwrap();
    let t = std::thread::spawn(move || w.write_all(b"version = 1\n"));
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!("/proc/self/fd/{}", r.as_raw_fd()));
    let got = read_as(&path, 100, Input::RegularOrPipe).unwrap();
    t.join().unwrap().unwrap();
    assert_eq!(got, b"version = 1\n");
    assert!(read_as(Path::new("/dev/zero"), 100, Input::RegularOrPipe).is_err());
}

#[test]
fn only_plain_relative_paths() {
    for bad in ["", "/x", "../x", "a//b", "a/", "a/./b", "a\\b", "a\0b", "."] {
        assert!(!plain_relative(bad), "{bad:?}");
    }
    assert!(plain_relative("terraform/main.tf"));
}

/// Every file under `dir`, hidden ones included, with its content.
fn listing(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(format!("{rel}/"), Vec::new());
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn set(files: &[(&str, &str)]) -> std::collections::BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect()
}

/// A render manifest naming `files`.
const OLD_LIST: &str = "files = [\"a.tf\", \"b.tf\", \"sub/c.tf\", \"gone.tf\"]\n";
const NEW_LIST: &str = "files = [\"a.tf\", \"b.tf\", \"sub/c.tf\", \"new/e.tf\"]\n";

/// A render-like set: files replaced, one added, one unchanged, one removed, in two
/// directories, with the manifest that names them; `fail_at` also makes a rename fail, so
/// the rollback itself is killed.
fn killed_at(step: usize, fail_at: usize) -> (bool, std::collections::BTreeMap<String, Vec<u8>>) {
    let d = tempfile::tempdir().unwrap();
    let old = set(&[
        ("a.tf", "a1"),
        ("b.tf", "b"),
        ("sub/c.tf", "c1"),
        ("gone.tf", "g"),
        (".gpuplan-render.toml", OLD_LIST),
    ]);
    for (k, v) in old.iter().filter(|(k, _)| !k.ends_with('/')) {
        let p = d.path().join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v).unwrap();
    }
    let mut t = Tree::new(d.path(), true);
    t.put("a.tf", b"a2".to_vec());
    t.put("b.tf", b"b".to_vec());
    t.put("sub/c.tf", b"c2".to_vec());
    t.put("new/e.tf", b"e".to_vec());
    t.put(".gpuplan-render.toml", NEW_LIST.as_bytes().to_vec());
    t.remove("gone.tf");
    super::faults::STEP.with(|s| s.set(0));
    super::faults::KILL_AT.with(|k| k.set(step));
    FAIL_AT.with(|f| f.set(fail_at));
    let _ = t.commit();
    // Never killed: the run went to its end.
    let ok = super::faults::STEP.with(|s| s.get()) < step;
    super::faults::KILL_AT.with(|k| k.set(0));
    FAIL_AT.with(|f| f.set(0));
    // The next run: any lock on the directory completes or undoes what was left.
    let before = listing(d.path());
    let j = std::fs::read_to_string(d.path().join(super::imp::journal::NAME)).unwrap_or_default();
    drop(
        lock(d.path(), Hold::Read, false)
            .unwrap_or_else(|e| panic!("{e}\n{j}\n{:?}", before.keys().collect::<Vec<_>>())),
    );
    (ok, listing(d.path()))
}

#[test]
fn a_run_killed_at_any_write_leaves_the_old_set_or_the_new_one_for_the_next_run() {
    let old = set(&[
        ("a.tf", "a1"),
        ("b.tf", "b"),
        ("sub/", ""),
        ("sub/c.tf", "c1"),
        ("gone.tf", "g"),
        (".gpuplan-render.toml", OLD_LIST),
    ]);
    let new = set(&[
        ("a.tf", "a2"),
        ("b.tf", "b"),
        ("sub/", ""),
        ("sub/c.tf", "c2"),
        ("new/", ""),
        ("new/e.tf", "e"),
        (".gpuplan-render.toml", NEW_LIST),
    ]);
    let (mut olds, mut news) = (0, 0);
    for fail_at in [0, 1, 3, 5] {
        let mut step = 1;
        loop {
            let (ok, after) = killed_at(step, fail_at);
            assert!(
                after == old || after == new,
                "killed at write {step} (rename {fail_at} failing): {:?}",
                after.keys().collect::<Vec<_>>()
            );
            if after == old {
                olds += 1;
            } else {
                news += 1;
            }
            if ok {
                break;
            }
            step += 1;
        }
    }
    // Both outcomes occur: kills before the swap journal undo, kills after it complete.
    eprintln!("old {olds}, new {news}");
    assert!(olds > 5 && news > 5, "old {olds}, new {news}");
}

#[test]
fn a_second_writer_waits_for_the_first_and_gives_up_after_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let first = lock(d.path(), Hold::Write, false).unwrap().unwrap();
    std::env::set_var("GPUPLAN_LOCK_TIMEOUT", "0");
    let err = match lock(d.path(), Hold::Write, false) {
        Err(e) => e,
        Ok(_) => panic!("a second writer got the lock"),
    };
    assert!(err.to_string().contains("GPUPLAN_LOCK_TIMEOUT"), "{err}");
    // A reader waits for a writer too (it would see half a set).
    assert!(lock(d.path(), Hold::Read, false).is_err());
    drop(first);
    let readers = (
        lock(d.path(), Hold::Read, false).unwrap(),
        lock(d.path(), Hold::Read, false).unwrap(),
    );
    assert!(readers.0.is_some() && readers.1.is_some());
    std::env::remove_var("GPUPLAN_LOCK_TIMEOUT");
}

#[test]
fn a_damaged_journal_is_named_and_nothing_is_touched() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("keep.tf"), "k").unwrap();
    std::fs::write(
        d.path().join(super::imp::journal::NAME),
        "version = 1\nphase = \"swap\"\n[[entry]]\ndir = \"\"\nname = \"keep.tf\"\nbackup = \"../../etc/passwd\"\n",
    )
    .unwrap();
    let err = match lock(d.path(), Hold::Write, false) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a journal naming a foreign file was followed"),
    };
    assert!(err.contains("not a journal gpuplan wrote"), "{err}");
    assert_eq!(std::fs::read(d.path().join("keep.tf")).unwrap(), b"k");
}

/// Issue 58: a journal planted beside files gpuplan never wrote named them, and the next run
/// that locked the directory (a read-only one too) deleted or replaced them. Each phase's
/// way of removing or replacing a file is tried on a file no list of gpuplan's names.
#[test]
fn a_planted_journal_touches_no_file_gpuplan_does_not_own() {
    for (phase, temp, backup, link) in [
        (
            "undo",
            Some(".notes.md.gpuplan-new-0123456789abcdef"),
            None,
            false,
        ),
        (
            "swap",
            Some(".notes.md.gpuplan-new-0123456789abcdef"),
            None,
            false,
        ),
        (
            "swap",
            None,
            Some(".notes.md.gpuplan-old-0123456789abcdef"),
            true,
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("notes.md"), "mine").unwrap();
        std::fs::write(
            d.path().join(".gpuplan-render.toml"),
            "files = [\"a.tf\"]\n",
        )
        .unwrap();
        if let Some(t) = temp {
            std::fs::write(d.path().join(t), "planted").unwrap();
        }
        if let (Some(b), true) = (backup, link) {
            std::fs::hard_link(d.path().join("notes.md"), d.path().join(b)).unwrap();
        }
        let mut j = format!(
            "version = 1\nphase = \"{phase}\"\n[[entry]]\ndir = \"\"\nname = \"notes.md\"\n"
        );
        for (k, v) in [("temp", temp), ("backup", backup)] {
            if let Some(v) = v {
                j.push_str(&format!("{k} = \"{v}\"\n"));
            }
        }
        std::fs::write(d.path().join(super::imp::journal::NAME), j).unwrap();
        for hold in [Hold::Read, Hold::Write] {
            let err = match lock(d.path(), hold, false) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{phase}: a planted journal was followed"),
            };
            assert!(err.contains("no list of gpuplan's here names"), "{err}");
            assert_eq!(std::fs::read(d.path().join("notes.md")).unwrap(), b"mine");
        }
    }
}

#[test]
fn temporary_files_of_a_killed_run_are_swept_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let ours = ".main.tf.gpuplan-new-0123456789abcdef";
    let theirs = [
        ".main.tf.gpuplan-new-xyz",
        "main.tf.gpuplan-old-0123456789abcdef",
        ".env",
    ];
    std::fs::write(d.path().join(ours), "x").unwrap();
    for n in theirs {
        std::fs::write(d.path().join(n), "x").unwrap();
    }
    std::fs::create_dir(d.path().join(".gpuplan-stage-Ab12Cd")).unwrap();
    std::fs::write(d.path().join(".gpuplan-stage-Ab12Cd/prices.csv"), "x").unwrap();
    drop(lock(d.path(), Hold::Write, false).unwrap());
    let left: Vec<String> = listing(d.path()).into_keys().collect();
    let mut want: Vec<String> = theirs.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(left, want);
}

/// Issue 58: a second run writing into a subdirectory of a render's output swept the
/// render's temporary and kept files there. A lock covers what is nested in it: the inner
/// run waits until the outer one is done, and the outer one's files are left alone meanwhile.
#[test]
fn a_writer_nested_in_another_runs_output_waits_for_it() {
    let d = tempfile::tempdir().unwrap();
    let sub = d.path().join("terraform");
    std::fs::create_dir_all(&sub).unwrap();
    // A temporary of the outer run's, made under its lock.
    let temp = sub.join(".main.tf.gpuplan-new-0123456789abcdef");
    std::fs::write(&temp, "outer run's new content").unwrap();
    let outer = lock(d.path(), Hold::Write, false).unwrap().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let inner = {
        let sub = sub.clone();
        let temp = temp.clone();
        std::thread::spawn(move || {
            // Retried: another test may set GPUPLAN_LOCK_TIMEOUT to 0 meanwhile.
            let start = std::time::Instant::now();
            let l = loop {
                match lock(&sub, Hold::Write, false) {
                    Ok(l) => break l,
                    Err(_) if start.elapsed() < std::time::Duration::from_secs(20) => {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    Err(e) => panic!("{e}"),
                }
            };
            // Only once the outer run let go: its temporary was still there until then.
            tx.send(()).unwrap();
            drop(l);
            temp.exists()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(rx.try_recv().is_err(), "the nested writer did not wait");
    assert!(
        temp.exists(),
        "the outer run's temporary was swept under it"
    );
    drop(outer);
    rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    // Once the outer run is done, its leftovers are the inner run's to sweep.
    assert!(!inner.join().unwrap());
}

/// Issue 58: a first set killed at any write leaves no directory at all or the whole set,
/// and the next first set leaves nothing beside the directory (the killed run's staging
/// directory is swept).
#[test]
fn a_first_set_killed_at_any_write_leaves_no_directory_or_the_whole_set() {
    let files = [
        ("a.tf", "a"),
        ("sub/c.tf", "c"),
        (".gpuplan-render.toml", NEW_LIST),
    ];
    let write = |out: &Path| {
        super::first_set(out, |staged, lock| {
            let mut t = Tree::new(staged, true);
            for (k, v) in files {
                t.put(k, v.as_bytes().to_vec());
            }
            t.commit_in(lock)
        })
    };
    let (mut absent, mut whole) = (0, 0);
    for step in 1.. {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("new/out");
        super::faults::STEP.with(|s| s.set(0));
        super::faults::KILL_AT.with(|k| k.set(step));
        let _ = write(&out);
        let ran_out = super::faults::STEP.with(|s| s.get()) < step;
        super::faults::KILL_AT.with(|k| k.set(0));
        if d.path().join("new").exists() {
            assert_eq!(
                listing(&out).len(),
                4,
                "killed at write {step}: a partial set"
            );
            whole += 1;
        } else {
            absent += 1;
            assert!(matches!(write(&out), Ok(Some(()))), "step {step}");
        }
        let beside: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["new"], "killed at write {step}: left beside it");
        if ran_out {
            break;
        }
    }
    assert!(absent > 1 && whole >= 1, "{absent} absent, {whole} whole");
}

/// Issue 75 item 6: a first set that fails at any write names the directory the user gave,
/// never the staging directory it was being written in.
#[test]
fn a_first_set_that_fails_names_the_directory_asked_for() {
    let mut failed = 0;
    for step in 1..12 {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("new/out");
        FAIL_AT.with(|f| f.set(step));
        let r = super::first_set(&out, |staged, lock| {
            let mut t = Tree::new(staged, true);
            t.put("a.tf", b"a".to_vec());
            t.put("sub/c.tf", b"c".to_vec());
            t.put(".gpuplan-render.toml", NEW_LIST.as_bytes().to_vec());
            t.commit_in(lock)
        });
        FAIL_AT.with(|f| f.set(0));
        if let Err(e) = r {
            failed += 1;
            let said = format!("{e} {:?} {}", e.path, e.source);
            assert!(!said.contains(".gpuplan-first-"), "step {step}: {said}");
            assert!(
                e.path.starts_with(d.path().join("new")),
                "step {step}: {said}"
            );
            assert!(!d.path().join("new").exists(), "step {step}");
        }
    }
    assert!(failed > 0, "no step failed");
}
