//! The keyed hash an account is kept as: the stores, entry tokens and the
//! booking name an account by it, never by the raw `sub`.

use core::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Length of an account hash, in bytes.
pub const ACCOUNT_HASH_LEN: usize = 8;

/// Computes the account hash of a room's account under a secret key.
///
/// The key is turned into a keyed HMAC state once; each hash is one clone
/// and a few SHA-256 blocks. `Debug` shows nothing of the key.
#[derive(Clone)]
pub struct AccountHasher {
    mac: HmacSha256,
}

impl fmt::Debug for AccountHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccountHasher(..)")
    }
}

impl AccountHasher {
    /// A hasher keyed with `key` (any length; the caller decides how long a
    /// key it trusts).
    #[must_use]
    pub fn new(key: &[u8]) -> AccountHasher {
        let mac = HmacSha256::new_from_slice(key).unwrap_or_else(|_| {
            // Unreachable: HMAC takes keys of any length. Should that ever
            // change, key with the key's digest (what HMAC does with long
            // keys) rather than panic or drop the key.
            let mut block = hmac::digest::Key::<HmacSha256>::default();
            for (b, d) in block.iter_mut().zip(Sha256::digest(key)) {
                *b = d;
            }
            HmacSha256::new(&block)
        });
        AccountHasher { mac }
    }

    /// `HMAC-SHA256(key, room || 0x00 || sub)`, first 8 bytes.
    ///
    /// The room is part of the input so one account has unrelated hashes in
    /// two rooms; the zero byte, which no room id contains, keeps
    /// `("ab", "c")` and `("a", "bc")` apart.
    #[must_use]
    pub fn hash(&self, room: &str, sub: &str) -> [u8; ACCOUNT_HASH_LEN] {
        let mut mac = self.mac.clone();
        mac.update(room.as_bytes());
        mac.update(&[0]);
        mac.update(sub.as_bytes());
        let tag = mac.finalize().into_bytes();
        let mut out = [0u8; ACCOUNT_HASH_LEN];
        for (o, t) in out.iter_mut().zip(tag) {
            *o = t;
        }
        out
    }
}
