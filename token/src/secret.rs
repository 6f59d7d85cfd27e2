//! Shared secrets other than signing keys (the admin key, the edge secret,
//! the bypass secret): how long one must be, and how a presented value is
//! compared with it. Comparing is the only thing a [`Secret`] can do.

use core::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Shortest secret worth trusting, in bytes: signing keys shorter than this
/// are refused, and so are the edge's `EDGE_SECRET` and `BYPASS_SECRET`; the
/// origin starts with a warning when its admin key or edge secret is shorter.
pub const MIN_SECRET_LEN: usize = 16;

/// A shared secret kept only as its SHA-256 digest.
///
/// [`Secret::matches`] compares digests in constant time, so the time taken
/// reveals neither the secret's content nor its length (comparing the raw
/// bytes would stop early at the first difference or at a length mismatch).
/// The raw secret is not kept, and `Debug` prints nothing of it.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl Secret {
    /// Keeps `raw`'s digest. Length rules are the caller's (see
    /// [`MIN_SECRET_LEN`]): this accepts any bytes.
    #[must_use]
    pub fn new(raw: impl AsRef<[u8]>) -> Secret {
        Secret(digest(raw.as_ref()))
    }

    /// Whether `presented` is exactly the secret, compared in constant time.
    #[must_use]
    pub fn matches(&self, presented: impl AsRef<[u8]>) -> bool {
        digest(presented.as_ref()).ct_eq(&self.0).into()
    }
}

impl fmt::Debug for Secret {
    /// Redacted: a digest of a short secret can be brute-forced.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}
