//! Call nonces: the status record of a call counts only with its nonce,
//! which the shell reads only once the command is over.

/// Hex digits of a call's nonce (64 random bits).
pub(crate) const NONCE_DIGITS: usize = 16;

/// 64 random bits in hex, drawn from a pool that one getrandom(2) fills for
/// [`NONCES_PER_FILL`] calls (a system call per call was ~1 µs of a session
/// call's ~110).
pub(crate) fn next() -> std::io::Result<String> {
    const NONCE_BYTES: usize = NONCE_DIGITS / 2;
    static POOL: std::sync::Mutex<([u8; NONCE_BYTES * NONCES_PER_FILL], usize)> =
        std::sync::Mutex::new((
            [0; NONCE_BYTES * NONCES_PER_FILL],
            NONCE_BYTES * NONCES_PER_FILL,
        ));
    let mut pool = POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (bytes, used) = &mut *pool;
    if *used + NONCE_BYTES > bytes.len() {
        let written =
            rustix::rand::getrandom(&mut bytes[..], rustix::rand::GetRandomFlags::empty())?;
        if written != bytes.len() {
            return Err(std::io::Error::other(
                "getrandom gave fewer bytes than asked",
            ));
        }
        *used = 0;
    }
    let drawn = &mut bytes[*used..*used + NONCE_BYTES];
    let mut nonce = String::with_capacity(NONCE_DIGITS);
    bashtool_process::fixed_width::push_hex(&mut nonce, drawn);
    // Used bytes are wiped: the pool holds only nonces still to come.
    drawn.fill(0);
    *used += NONCE_BYTES;
    Ok(nonce)
}

/// Calls served by one fill of the nonce pool.
const NONCES_PER_FILL: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_hex_of_the_driver_width_and_differ_across_pool_fills() {
        let nonces: Vec<String> = (0..NONCES_PER_FILL * 3)
            .map(|_| next().expect("getrandom"))
            .collect();
        for nonce in &nonces {
            assert_eq!(nonce.len(), NONCE_DIGITS);
            assert!(
                nonce.bytes().all(|byte| byte.is_ascii_hexdigit()),
                "{nonce}"
            );
        }
        let mut unique = nonces.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), nonces.len(), "a nonce came twice");
    }
}
