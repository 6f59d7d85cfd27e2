//! The byte layout: encoding claims into a payload, splitting and
//! base64-decoding a token string, and parsing a payload back out.
//!
//! Nothing here touches keys; `keyring.rs` decides what is authentic. All
//! decoding works on fixed stack buffers so that hostile input cannot make
//! verification allocate, and every length is checked before it is used.

use alloc::string::String;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::claims::{Claims, Kind, MAX_ROOM_LEN, is_valid_room, is_valid_room_bytes};
use crate::error::TokenError;

/// Format version of a token without an account: the first payload byte.
pub(crate) const VERSION: u8 = 1;

/// Format version of a token that carries an account: version 1's fields
/// followed by the 8-byte account hash. Tokens without an account stay
/// version 1, byte for byte, so verifiers of either age accept them.
pub(crate) const VERSION_ACCOUNT: u8 = 2;

/// Length of the account hash a version-2 payload ends with.
pub(crate) const ACCOUNT_LEN: usize = 8;

/// HMAC-SHA256 output length.
pub(crate) const MAC_LEN: usize = 32;

/// Longest kid, in bytes: a field of every token, so the keyring's rule.
pub const MAX_KID_LEN: usize = 16;

/// Payload bytes that do not depend on kid or room: version, kind, kid_len,
/// room_len, visitor (16), seq, issued_at, expires_at (8 each).
const FIXED_LEN: usize = 4 + 16 + 3 * 8;

/// Largest version-1 payload.
const MAX_V1_PAYLOAD_LEN: usize = FIXED_LEN + MAX_KID_LEN + MAX_ROOM_LEN;

/// Largest payload a valid token can carry (version 2, with an account).
pub(crate) const MAX_PAYLOAD_LEN: usize = MAX_V1_PAYLOAD_LEN + ACCOUNT_LEN;

/// Unpadded base64 length of `n` bytes.
const fn b64_len(n: usize) -> usize {
    (n * 4).div_ceil(3)
}

/// Unpadded base64 length of a MAC (43).
const MAC_B64_LEN: usize = b64_len(MAC_LEN);

/// Longest unpadded base64 payload a valid token can carry (176).
const MAX_PAYLOAD_B64_LEN: usize = b64_len(MAX_PAYLOAD_LEN);

/// Longest version-1 token (210).
#[cfg(test)]
const MAX_V1_TOKEN_LEN: usize = b64_len(MAX_V1_PAYLOAD_LEN) + 1 + MAC_B64_LEN;

/// Longest token of any version (220, a version-2 one); `MAX_TOKEN_LEN`
/// leaves headroom above it for future versions.
pub(crate) const MAX_WIRE_TOKEN_LEN: usize = MAX_PAYLOAD_B64_LEN + 1 + MAC_B64_LEN;

/// A payload held on the stack, up to [`MAX_PAYLOAD_LEN`] bytes.
pub(crate) struct PayloadBuf {
    /// Room for the largest payload, rounded up to whole base64 quads so the
    /// decoder never refuses a buffer on its conservative size estimate.
    bytes: [u8; MAX_PAYLOAD_LEN.next_multiple_of(3)],
    len: usize,
}

impl PayloadBuf {
    /// The payload bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // `len` is only ever set from a successful write into `bytes`, so
        // this cannot go out of range; `get` keeps it panic-free regardless.
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

/// Appends big-endian fields to a fixed buffer.
struct Writer {
    buf: PayloadBuf,
}

impl Writer {
    fn put(&mut self, data: &[u8]) {
        let end = self.buf.len + data.len();
        // Callers bound every field, so this always fits; if it ever did not,
        // the field is dropped and the token fails to verify rather than the
        // signer panicking.
        if let Some(dst) = self.buf.bytes.get_mut(self.buf.len..end) {
            dst.copy_from_slice(data);
            self.buf.len = end;
        }
    }
}

/// Serialises `claims` under `kid` into a payload.
///
/// `kid` comes from the keyring and is always valid. An invalid room id is
/// written as an empty room, which [`parse_payload`] rejects, so a bad claim
/// produces a token that can never verify instead of a panic or a token for
/// a truncated (different) room.
pub(crate) fn encode_payload(claims: &Claims, kid: &str) -> PayloadBuf {
    let room: &[u8] = if is_valid_room(&claims.room) {
        claims.room.as_bytes()
    } else {
        &[]
    };
    let mut w = Writer {
        buf: PayloadBuf {
            bytes: [0; MAX_PAYLOAD_LEN.next_multiple_of(3)],
            len: 0,
        },
    };
    // Both lengths are bounded (16 and 64) by the keyring and room rules, so
    // the narrowing cannot lose bits.
    let kid_len = u8::try_from(kid.len()).unwrap_or(0);
    let room_len = u8::try_from(room.len()).unwrap_or(0);
    let version = if claims.account.is_some() {
        VERSION_ACCOUNT
    } else {
        VERSION
    };
    w.put(&[version, claims.kind.to_byte(), kid_len]);
    w.put(kid.as_bytes());
    w.put(&[room_len]);
    w.put(room);
    w.put(&claims.visitor.to_be_bytes());
    w.put(&claims.seq.to_be_bytes());
    w.put(&claims.issued_at.to_be_bytes());
    w.put(&claims.expires_at.to_be_bytes());
    if let Some(account) = &claims.account {
        w.put(account);
    }
    w.buf
}

/// Builds the token string from a payload and its MAC.
pub(crate) fn encode_token(payload: &[u8], mac: &[u8]) -> String {
    let mut out = String::with_capacity(b64_len(payload.len()) + 1 + MAC_B64_LEN);
    URL_SAFE_NO_PAD.encode_string(payload, &mut out);
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(mac, &mut out);
    out
}

/// Splits a token at its single `.` and decodes both halves.
///
/// The MAC's half has a fixed length, so the `.` is looked for in one
/// place rather than searched for along the payload; a `.` anywhere else is
/// not in the base64url alphabet, and decoding refuses it. The length
/// checks come before decoding so that oversized halves are refused without
/// work. `URL_SAFE_NO_PAD` rejects padding and non-zero trailing bits, so
/// each payload has exactly one accepted encoding.
pub(crate) fn decode_token(token: &str) -> Result<(PayloadBuf, [u8; MAC_LEN]), TokenError> {
    let bytes = token.as_bytes();
    let dot = bytes
        .len()
        .checked_sub(MAC_B64_LEN + 1)
        .ok_or(TokenError::Malformed)?;
    let (payload_b64, rest) = bytes.split_at_checked(dot).ok_or(TokenError::Malformed)?;
    let Some((&b'.', mac_b64)) = rest.split_first() else {
        return Err(TokenError::Malformed);
    };
    if payload_b64.len() > MAX_PAYLOAD_B64_LEN {
        return Err(TokenError::Malformed);
    }

    let mut mac_buf = [0u8; MAC_LEN.next_multiple_of(3)];
    let mac_len = URL_SAFE_NO_PAD
        .decode_slice(mac_b64, &mut mac_buf)
        .map_err(|_| TokenError::Malformed)?;
    let mac: [u8; MAC_LEN] = mac_buf
        .get(..mac_len)
        .and_then(|m| m.try_into().ok())
        .ok_or(TokenError::Malformed)?;

    let mut payload = PayloadBuf {
        bytes: [0; MAX_PAYLOAD_LEN.next_multiple_of(3)],
        len: 0,
    };
    payload.len = URL_SAFE_NO_PAD
        .decode_slice(payload_b64, &mut payload.bytes)
        .map_err(|_| TokenError::Malformed)?;
    Ok((payload, mac))
}

/// A parsed payload, borrowing variable-length fields from the buffer.
///
/// Nothing in it is trustworthy until the MAC over the same bytes checks out.
#[derive(Debug)]
pub(crate) struct Payload<'a> {
    pub(crate) kind: Kind,
    pub(crate) kid: &'a [u8],
    pub(crate) room: &'a [u8],
    pub(crate) visitor: u128,
    pub(crate) seq: u64,
    pub(crate) issued_at: u64,
    pub(crate) expires_at: u64,
    pub(crate) account: Option<[u8; ACCOUNT_LEN]>,
}

/// Reads big-endian fields off the front of a slice; every read is checked.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TokenError> {
        let (head, tail) = self.rest.split_at_checked(n).ok_or(TokenError::Malformed)?;
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], TokenError> {
        self.take(N)?.try_into().map_err(|_| TokenError::Malformed)
    }

    fn u8(&mut self) -> Result<u8, TokenError> {
        let [byte] = self.array()?;
        Ok(byte)
    }

    /// A length-prefixed field whose length must lie in `1..=max`.
    fn field(&mut self, max: usize) -> Result<&'a [u8], TokenError> {
        let len = usize::from(self.u8()?);
        if len == 0 || len > max {
            return Err(TokenError::Malformed);
        }
        self.take(len)
    }
}

/// Parses a payload's structure: version, kind, lengths, the account for
/// version 2, no trailing bytes.
///
/// The room must also be a valid room id, so the verifier can hand it back
/// as a `String` without a UTF-8 failure path after the MAC check.
pub(crate) fn parse_payload(bytes: &[u8]) -> Result<Payload<'_>, TokenError> {
    let mut r = Reader { rest: bytes };
    let has_account = match r.u8()? {
        VERSION => false,
        VERSION_ACCOUNT => true,
        _ => return Err(TokenError::Malformed),
    };
    let kind = Kind::from_byte(r.u8()?).ok_or(TokenError::Malformed)?;
    let kid = r.field(MAX_KID_LEN)?;
    let room = r.field(MAX_ROOM_LEN)?;
    let visitor = u128::from_be_bytes(r.array()?);
    let seq = u64::from_be_bytes(r.array()?);
    let issued_at = u64::from_be_bytes(r.array()?);
    let expires_at = u64::from_be_bytes(r.array()?);
    let account = if has_account { Some(r.array()?) } else { None };
    if !r.rest.is_empty() {
        return Err(TokenError::Malformed);
    }
    if !is_valid_room_bytes(room) {
        return Err(TokenError::Malformed);
    }
    Ok(Payload {
        kind,
        kid,
        room,
        visitor,
        seq,
        issued_at,
        expires_at,
        account,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn claims(room: &str) -> Claims {
        Claims {
            kind: Kind::Entry,
            room: room.to_string(),
            visitor: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
            seq: 7,
            issued_at: 1_700_000_000,
            expires_at: 1_700_000_600,
            account: None,
        }
    }

    #[test]
    fn constants_match_layout() {
        assert_eq!(FIXED_LEN, 44);
        assert_eq!(MAX_V1_PAYLOAD_LEN, 124);
        assert_eq!(MAX_PAYLOAD_LEN, 132);
        assert_eq!(MAC_B64_LEN, 43);
        assert_eq!(MAX_PAYLOAD_B64_LEN, 176);
        assert_eq!(MAX_V1_TOKEN_LEN, 210);
        assert_eq!(MAX_WIRE_TOKEN_LEN, 220);
    }

    #[test]
    fn payload_layout_is_exact() {
        let p = encode_payload(&claims("ab"), "k1");
        let expected: &[u8] = &[
            1, 2, 2, b'k', b'1', 2, b'a', b'b', // header, kid, room
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, // visitor
            0, 0, 0, 0, 0, 0, 0, 7, // seq
            0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00, // issued_at
            0, 0, 0, 0, 0x65, 0x53, 0xf3, 0x58, // expires_at
        ];
        assert_eq!(p.as_slice(), expected);
        let parsed = parse_payload(p.as_slice()).unwrap();
        assert_eq!(parsed.kid, b"k1");
        assert_eq!(parsed.room, b"ab");
        assert_eq!(parsed.seq, 7);
        assert_eq!(parsed.account, None);
    }

    #[test]
    fn payload_with_account_is_version_2_with_the_account_last() {
        let without = encode_payload(&claims("ab"), "k1");
        let mut c = claims("ab");
        c.account = Some([0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7]);
        let with = encode_payload(&c, "k1");
        let (head, account) = with.as_slice().split_at(without.as_slice().len());
        // Version byte 2, then version 1's fields unchanged, then the account.
        assert_eq!(head[0], VERSION_ACCOUNT);
        assert_eq!(head[1..], without.as_slice()[1..]);
        assert_eq!(account, &[0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7]);
        let parsed = parse_payload(with.as_slice()).unwrap();
        assert_eq!(parsed.account, c.account);
        assert_eq!(parsed.expires_at, c.expires_at);
    }

    #[test]
    fn longest_payload_fits() {
        let room = "r".repeat(MAX_ROOM_LEN);
        let kid = "k".repeat(MAX_KID_LEN);
        let p = encode_payload(&claims(&room), &kid);
        assert_eq!(p.as_slice().len(), MAX_V1_PAYLOAD_LEN);
        let token = encode_token(p.as_slice(), &[0; MAC_LEN]);
        assert_eq!(token.len(), MAX_V1_TOKEN_LEN);
        let (decoded, _) = decode_token(&token).unwrap();
        assert_eq!(decoded.as_slice(), p.as_slice());

        let mut c = claims(&room);
        c.account = Some([0xff; ACCOUNT_LEN]);
        let p = encode_payload(&c, &kid);
        assert_eq!(p.as_slice().len(), MAX_PAYLOAD_LEN);
        let token = encode_token(p.as_slice(), &[0; MAC_LEN]);
        assert_eq!(token.len(), MAX_WIRE_TOKEN_LEN);
        let (decoded, _) = decode_token(&token).unwrap();
        assert_eq!(decoded.as_slice(), p.as_slice());
        assert_eq!(
            parse_payload(decoded.as_slice()).unwrap().account,
            c.account
        );
    }

    #[test]
    fn invalid_room_never_parses() {
        for room in ["", "Upper", "-lead", "a b", &"a".repeat(MAX_ROOM_LEN + 1)] {
            let p = encode_payload(&claims(room), "k1");
            assert_eq!(
                parse_payload(p.as_slice()).unwrap_err(),
                TokenError::Malformed,
                "{room:?}"
            );
        }
    }

    #[test]
    fn rejects_bad_structure() {
        let good = encode_payload(&claims("ab"), "k1");
        let good = good.as_slice();

        let mut v = good.to_vec();
        v[0] = 2; // version 2 without the account's 8 bytes
        assert!(parse_payload(&v).is_err());

        for version in [0, 3, 0xff] {
            let mut v = good.to_vec();
            v[0] = version; // unknown version
            assert!(parse_payload(&v).is_err(), "version {version}");
        }

        let mut v = good.to_vec();
        v.extend_from_slice(&[0; ACCOUNT_LEN]); // an account under version 1
        assert!(parse_payload(&v).is_err());

        let mut v = good.to_vec();
        v[1] = 3; // unknown kind
        assert!(parse_payload(&v).is_err());

        let mut v = good.to_vec();
        v[2] = 0; // empty kid
        assert!(parse_payload(&v).is_err());

        let mut v = good.to_vec();
        v.push(0); // trailing byte
        assert!(parse_payload(&v).is_err());

        for n in 0..good.len() {
            assert!(parse_payload(&good[..n]).is_err(), "prefix {n}");
        }

        let mut c = claims("ab");
        c.account = Some([9; ACCOUNT_LEN]);
        let with = encode_payload(&c, "k1");
        let with = with.as_slice();
        for n in 0..with.len() {
            assert!(parse_payload(&with[..n]).is_err(), "v2 prefix {n}");
        }
        let mut v = with.to_vec();
        v.push(0); // trailing byte after the account
        assert!(parse_payload(&v).is_err());
        let mut v = with.to_vec();
        v[0] = VERSION; // version 1 with 8 bytes too many
        assert!(parse_payload(&v).is_err());
    }
}
