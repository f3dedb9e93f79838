//! Optional authentication of clients by a server (protocol 1.2, feature `auth`).
//!
//! A server started with `--auth-users FILE` sends a fresh 32-byte nonce in `welcome`. The
//! client answers `auth {user, nonce, mac}` and the server answers `auth_ok {mac}`:
//!
//! ```text
//! key        = SHA-256("linerate-auth-v1:" user ":" secret)      (or given as sha256:HEX)
//! client mac = HMAC-SHA256(key, "linerate-auth-v1 client" ‖ server nonce ‖ client nonce ‖ user)
//! server mac = HMAC-SHA256(key, "linerate-auth-v1 server" ‖ server nonce ‖ client nonce ‖ user)
//! ```
//!
//! Why this shape: the secret never crosses the wire, a recorded exchange cannot be replayed
//! (both nonces are fresh), the client learns that the server knows the key too (so a
//! look-alike server cannot collect proofs), and the users file may hold the derived key
//! instead of the secret. It authenticates; it does not encrypt: test traffic and results
//! are readable on the path, as with netperf and iperf3. Data connections need no proof of
//! their own: they present the 128-bit test token, which is only sent after authentication.
//!
//! The users file has one `user:secret` or `user:sha256:HEX` per line; blank lines and lines
//! starting with `#` are ignored. A file readable by group or others is refused (it holds
//! secrets), as ssh does for private keys.

use std::collections::HashMap;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::model::plan::{Credentials, Key};

type HmacSha256 = Hmac<Sha256>;

/// The only method this build knows.
pub const METHOD: &str = "hmac-sha256";
/// Length of every nonce, bytes.
pub const NONCE_LEN: usize = 32;
/// Longest user name accepted, bytes.
pub const MAX_USER_LEN: usize = 64;
/// Most users a users file may hold (the file is read whole at start).
pub const MAX_USERS: usize = 10_000;
/// Largest users file read, bytes.
pub const MAX_USERS_FILE: u64 = 1 << 20;

const CLIENT_LABEL: &[u8] = b"linerate-auth-v1 client";
const SERVER_LABEL: &[u8] = b"linerate-auth-v1 server";

impl Key {
    /// The key of `user` with `secret`: SHA-256 of `linerate-auth-v1:user:secret`.
    pub fn derive(user: &str, secret: &str) -> Key {
        let mut h = Sha256::new();
        h.update(b"linerate-auth-v1:");
        h.update(user.as_bytes());
        h.update(b":");
        h.update(secret.as_bytes());
        Key(h.finalize().into())
    }

    fn mac(
        &self,
        label: &[u8],
        server_nonce: &[u8],
        client_nonce: &[u8],
        user: &str,
    ) -> HmacSha256 {
        // HMAC accepts keys of any length; 32 bytes cannot fail.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        m.update(label);
        m.update(server_nonce);
        m.update(client_nonce);
        m.update(user.as_bytes());
        m
    }

    /// `prover`'s proof, hex.
    pub fn proof(
        &self,
        prover: Prover,
        server_nonce: &[u8],
        client_nonce: &[u8],
        user: &str,
    ) -> String {
        hex(&self
            .mac(prover.label(), server_nonce, client_nonce, user)
            .finalize()
            .into_bytes())
    }

    /// Checks `prover`'s proof in constant time.
    pub fn verify(
        &self,
        prover: Prover,
        server_nonce: &[u8],
        client_nonce: &[u8],
        user: &str,
        mac_hex: &str,
    ) -> bool {
        let Some(mac) = unhex(mac_hex) else {
            return false;
        };
        self.mac(prover.label(), server_nonce, client_nonce, user)
            .verify_slice(&mac)
            .is_ok()
    }
}

/// Which end proves it knows the key: the two proofs differ, so neither can echo the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prover {
    /// The client, in `auth`.
    Client,
    /// The server, in `auth_ok`.
    Server,
}

impl Prover {
    fn label(self) -> &'static [u8] {
        match self {
            Prover::Client => CLIENT_LABEL,
            Prover::Server => SERVER_LABEL,
        }
    }
}

impl Credentials {
    /// Credentials from a user name and a secret.
    pub fn new(user: &str, secret: &str) -> Result<Credentials, String> {
        check_user(user)?;
        if secret.is_empty() {
            return Err("the authentication secret is empty: put it in the file given with --auth-secret-file (first line) or in LINERATE_AUTH_SECRET".into());
        }
        Ok(Credentials {
            user: user.to_string(),
            key: Key::derive(user, secret),
            required: false,
        })
    }

    /// Credentials from `--auth-user` and the first line of `--auth-secret-file` or, without
    /// a file, the `LINERATE_AUTH_SECRET` value given as `env_secret`. `None` when no user is
    /// given.
    pub fn from_args(
        user: Option<&str>,
        secret_file: Option<&Path>,
        env_secret: Option<String>,
    ) -> Result<Option<Credentials>, String> {
        let Some(user) = user else {
            if secret_file.is_some() {
                return Err("--auth-secret-file needs --auth-user NAME".into());
            }
            return Ok(None);
        };
        let secret = match secret_file {
            Some(p) => {
                let text = read_small(p, 64 << 10)
                    .map_err(|e| format!("cannot read the secret file {}: {e}", p.display()))?;
                text.lines().next().unwrap_or("").trim_end_matches('\r').to_string()
            }
            None => env_secret.ok_or_else(|| {
                "--auth-user needs a secret: --auth-secret-file FILE (its first line) or the environment variable LINERATE_AUTH_SECRET".to_string()
            })?,
        };
        Credentials::new(user, &secret).map(Some)
    }
}

fn check_user(user: &str) -> Result<(), String> {
    if user.is_empty()
        || user.len() > MAX_USER_LEN
        || !user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(format!(
            "user name {user:?} is not valid: use 1-{MAX_USER_LEN} characters of letters, digits, '.', '_', '-' or '@'"
        ));
    }
    Ok(())
}

/// The server's users and their keys.
#[derive(Debug, Clone, Default)]
pub struct Users {
    keys: HashMap<String, Key>,
}

impl Users {
    /// Parses a users file's text. Errors name the line.
    pub fn parse(text: &str) -> Result<Users, String> {
        let mut keys = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((user, rest)) = line.split_once(':') else {
                return Err(format!("line {n}: expected user:secret or user:sha256:HEX"));
            };
            check_user(user).map_err(|e| format!("line {n}: {e}"))?;
            let key = match rest.strip_prefix("sha256:") {
                Some(h) => Key(unhex(h)
                    .and_then(|b| <[u8; 32]>::try_from(b).ok())
                    .ok_or_else(|| {
                        format!("line {n}: sha256: must be followed by 64 hex digits")
                    })?),
                None if rest.is_empty() => {
                    return Err(format!("line {n}: empty secret for {user}"))
                }
                None => Key::derive(user, rest),
            };
            if keys.insert(user.to_string(), key).is_some() {
                return Err(format!("line {n}: user {user} appears twice"));
            }
            if keys.len() > MAX_USERS {
                return Err(format!("more than {MAX_USERS} users"));
            }
        }
        if keys.is_empty() {
            return Err("no users in it: add lines of user:secret".into());
        }
        Ok(Users { keys })
    }

    /// Reads and parses a users file; refuses one that group or others may read.
    pub fn load(path: &Path) -> Result<Users, String> {
        let what = |e: String| format!("--auth-users {}: {e}", path.display());
        let meta = std::fs::metadata(path).map_err(|e| what(e.to_string()))?;
        if crate::sys::process::readable_by_others(&meta) {
            return Err(what(format!(
                "it holds secrets but group or others may read it: chmod 600 {}",
                path.display()
            )));
        }
        let text = read_small(path, MAX_USERS_FILE).map_err(|e| what(e.to_string()))?;
        Users::parse(&text).map_err(what)
    }

    /// The key of `user`, if known.
    pub fn key(&self, user: &str) -> Option<&Key> {
        self.keys.get(user)
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are no users (never true for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

fn read_small(path: &Path, cap: u64) -> std::io::Result<String> {
    // A FIFO without a writer reads as empty rather than waiting for one.
    crate::sys::files::read_capped(path, cap).map_err(|e| match e {
        crate::sys::files::ReadError::Io(e) => e,
        e => std::io::Error::other(e.to_string()),
    })
}

/// A fresh random nonce.
pub fn nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(n)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    linerate_wire::hex::encode(bytes)
}

/// Bytes of a hex string from a peer or a file, `None` if it is not one or is longer than
/// 128 digits (no field here is longer than 64).
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() > 128 {
        return None;
    }
    linerate_wire::hex::decode(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values computed independently with Python 3's hashlib and hmac:
    //   key = hashlib.sha256(b"linerate-auth-v1:alice:s3cret").digest()
    //   hmac.new(key, b"linerate-auth-v1 client" + bytes(range(32)) + bytes(range(32,64))
    //            + b"alice", "sha256").hexdigest()
    // and the same with b"linerate-auth-v1 server".
    const KEY_HEX: &str = "071675e61c2401a64ab09d94022d3cce50511a710f5192375a2458cf49981df8";
    const CLIENT_MAC: &str = "f296e32d8761d013f0013c013a1e64e81018ce9ee7814e35052b5c2f08a079f9";
    const SERVER_MAC: &str = "87f00593bc479e49987249dc17c44839febf18a3717ebd4c926696f8a000e4fc";

    fn nonces() -> (Vec<u8>, Vec<u8>) {
        ((0u8..32).collect(), (32u8..64).collect())
    }

    #[test]
    fn derivation_and_macs_match_an_independent_implementation() {
        let key = Key::derive("alice", "s3cret");
        assert_eq!(hex(&key.0), KEY_HEX);
        let (s, c) = nonces();
        assert_eq!(key.proof(Prover::Client, &s, &c, "alice"), CLIENT_MAC);
        assert_eq!(key.proof(Prover::Server, &s, &c, "alice"), SERVER_MAC);
        assert!(key.verify(Prover::Client, &s, &c, "alice", CLIENT_MAC));
        assert!(key.verify(Prover::Server, &s, &c, "alice", SERVER_MAC));
        // The two directions' proofs differ: a server cannot echo the client's.
        assert!(!key.verify(Prover::Server, &s, &c, "alice", CLIENT_MAC));
    }

    #[test]
    fn wrong_secret_user_or_nonce_fails() {
        let key = Key::derive("alice", "s3cret");
        let (s, c) = nonces();
        let mac = key.proof(Prover::Client, &s, &c, "alice");
        assert!(!Key::derive("alice", "s3creT").verify(Prover::Client, &s, &c, "alice", &mac));
        assert!(!key.verify(Prover::Client, &s, &c, "bob", &mac));
        assert!(!key.verify(Prover::Client, &c, &s, "alice", &mac));
        assert!(!key.verify(Prover::Client, &s, &c, "alice", "zz"));
        assert!(!key.verify(Prover::Client, &s, &c, "alice", ""));
        assert!(!key.verify(Prover::Client, &s, &c, "alice", &mac[..62]));
    }

    #[test]
    fn users_file_plain_and_hashed_lines() {
        let text = format!("# team\n\nalice:s3cret\r\nbob:sha256:{KEY_HEX}\ncarol:a:b:c\n");
        let u = Users::parse(&text).unwrap();
        assert_eq!(u.len(), 3);
        assert_eq!(u.key("alice"), Some(&Key::derive("alice", "s3cret")));
        // bob's line holds alice's derived key, taken as is.
        assert_eq!(u.key("bob"), Some(&Key::derive("alice", "s3cret")));
        // Only the first colon separates: the secret may contain colons.
        assert_eq!(u.key("carol"), Some(&Key::derive("carol", "a:b:c")));
        assert!(u.key("dave").is_none());
    }

    #[test]
    fn users_file_errors_name_the_line() {
        for (text, needle) in [
            ("alice\n", "line 1: expected user:secret"),
            ("alice:x\nalice:y\n", "line 2: user alice appears twice"),
            ("a b:x\n", "line 1: user name"),
            ("alice:\n", "line 1: empty secret"),
            (
                "alice:sha256:abcd\n",
                "line 1: sha256: must be followed by 64 hex digits",
            ),
            ("# nobody\n", "no users"),
        ] {
            let e = Users::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn users_file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("users");
        std::fs::write(&p, "alice:s3cret\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Users::load(&p).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Users::load(&p).unwrap().len(), 1);
    }

    #[test]
    fn client_credentials_from_args() {
        assert_eq!(Credentials::from_args(None, None, None), Ok(None));
        let c = Credentials::from_args(Some("alice"), None, Some("s3cret".into()))
            .unwrap()
            .unwrap();
        assert_eq!(c.key, Key::derive("alice", "s3cret"));
        let e = Credentials::from_args(Some("alice"), None, None).unwrap_err();
        assert!(e.contains("LINERATE_AUTH_SECRET"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        std::fs::write(&p, "s3cret\nignored\n").unwrap();
        let c = Credentials::from_args(Some("alice"), Some(&p), None)
            .unwrap()
            .unwrap();
        assert_eq!(c.key, Key::derive("alice", "s3cret"));
        assert!(Credentials::from_args(None, Some(&p), None).is_err());
        assert!(Credentials::from_args(Some("a b"), Some(&p), None).is_err());
        // The key never shows in debug output.
        assert!(!format!("{c:?}").contains(&hex(&c.key.0)));
    }

    #[test]
    fn hex_round_trip_and_bad_hex() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xab, 0xff])),
            Some(vec![0, 1, 0xab, 0xff])
        );
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é1"), None);
        // Longer than any field: refused before decoding.
        assert_eq!(unhex(&"a".repeat(130)), None);
        assert_eq!(unhex(&"a".repeat(128)).map(|b| b.len()), Some(64));
    }
}
