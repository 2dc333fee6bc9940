//! Helpers the command-line tests share: run `tiermem`, expect success or an input error.
#![allow(dead_code, reason = "each test file uses some of the helpers")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem"))
}

pub fn tiermem(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// The command succeeded; its standard output.
pub fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}: {err}", o.status.code());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command refused its input: exit code 2, `needle` in the message, no panic.
pub fn bad(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}
