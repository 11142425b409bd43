//! Units at the edges. Inside the simulator bytes are `u64` (or `i64` where SGLang's
//! arithmetic can go negative), times are integer nanoseconds and bandwidths are bytes
//! per second (`f64`, since vendors quote fractional rates). GB = 10^9, GiB = 2^30,
//! exactly as SGLang prints them (`{x/1e9:.2f} GB`).

use std::fmt;

/// 1 GB as SGLang prints it (`requested / 1e9`).
pub const GB: u64 = 1_000_000_000;
/// 1 GiB (`1024**3`), the unit of SGLang's 10 GiB host-memory reserve.
pub const GIB: u64 = 1 << 30;
pub const MIB: u64 = 1 << 20;
pub const KIB: u64 = 1 << 10;
pub const MB: u64 = 1_000_000;
pub const KB: u64 = 1_000;
pub const TB: u64 = 1_000_000_000_000;
pub const TIB: u64 = 1 << 40;

/// Virtual time in nanoseconds.
pub type Nanos = u64;
pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Why a quantity failed to parse; the caller adds file, line and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

fn split_number(s: &str) -> Result<(f64, &str), UnitError> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '_'
                || ((c == '-' || c == '+') && i == 0)
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
        })
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError(format!("`{s}` does not start with a number")))?;
    if !v.is_finite() {
        return Err(UnitError(format!("`{s}` is not a finite number")));
    }
    Ok((v, unit.trim()))
}

fn byte_unit(unit: &str) -> Option<u64> {
    Some(match unit {
        "" | "B" => 1,
        "kB" | "KB" => KB,
        "MB" => MB,
        "GB" => GB,
        "TB" => TB,
        "KiB" => KIB,
        "MiB" => MIB,
        "GiB" => GIB,
        "TiB" => TIB,
        _ => return None,
    })
}

const BYTE_UNITS: &str = "B, KB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB (powers of 2)";

/// Parses a byte quantity a person writes: `880GB`, `135GiB`, `44928`, `1.5TB`.
/// Fractional results are rounded to the nearest byte. Negative values are refused.
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (v, unit) = split_number(s)?;
    let mult = byte_unit(unit).ok_or_else(|| {
        UnitError(format!(
            "unknown unit `{unit}` in `{s}`: expected {BYTE_UNITS}"
        ))
    })?;
    if v < 0.0 {
        return Err(UnitError(format!(
            "`{s}` is negative: a size must be at least 0"
        )));
    }
    let b = v * mult as f64;
    if b > u64::MAX as f64 {
        return Err(UnitError(format!("`{s}` is too large")));
    }
    // Integers times integer units stay exact.
    if v.fract() == 0.0 && v <= (u64::MAX / mult) as f64 {
        return Ok(v as u64 * mult);
    }
    Ok(b.round() as u64)
}

/// Parses a bandwidth: `5GB/s`, `55 GB/s`, `1.9e9` (bytes per second). Must be > 0.
pub fn parse_bandwidth(s: &str) -> Result<f64, UnitError> {
    let (v, unit) = split_number(s)?;
    let unit = unit
        .strip_suffix("/s")
        .unwrap_or(if unit.is_empty() { "" } else { "?" });
    let mult = byte_unit(unit).ok_or_else(|| {
        UnitError(format!("unknown bandwidth unit in `{s}`: expected a byte unit per second, e.g. `5GB/s`, `10GiB/s`"))
    })?;
    let bw = v * mult as f64;
    if !(bw > 0.0 && bw.is_finite()) {
        return Err(UnitError(format!(
            "`{s}` must be a finite rate greater than 0"
        )));
    }
    Ok(bw)
}

/// Parses a duration: `20s`, `150ms`, `6.67us`, `2min`, `1h`, or plain seconds. Must be ≥ 0.
pub fn parse_duration(s: &str) -> Result<Nanos, UnitError> {
    let (v, unit) = split_number(s)?;
    let mult: f64 = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "min" | "m" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(UnitError(format!(
                "unknown duration unit `{unit}` in `{s}`: expected ns, us, ms, s, min or h"
            )));
        }
    };
    if v < 0.0 {
        return Err(UnitError(format!(
            "`{s}` is negative: a duration must be at least 0"
        )));
    }
    let ns = v * mult;
    if ns.is_nan() || ns > MAX_DURATION_NS as f64 {
        return Err(UnitError(format!(
            "`{s}` is longer than {} s (116 days): no start-up or trace step takes that long",
            MAX_DURATION_NS / NS_PER_S
        )));
    }
    Ok(ns.round() as Nanos)
}

/// The longest duration a scenario may give (and the longest jitter draw: a draw past it
/// is taken as this), 10^7 s: far from u64 nanoseconds' 584 years, so sums of a few
/// durations never wrap.
pub const MAX_DURATION_NS: Nanos = 10_000_000 * NS_PER_S;

/// `{bytes/1e9:.2f}`: the way SGLang prints GB in its messages (sign kept: `-0.50`).
pub fn fmt_gb(bytes: i128) -> String {
    format!("{:.2}", bytes as f64 / 1e9)
}

/// `{bytes/2**30:.1f}`: SGLang's GiB figures in its logs.
pub fn fmt_gib1(bytes: i128) -> String {
    format!("{:.1}", bytes as f64 / GIB as f64)
}

/// A number from input as a message quotes it: plain (`0.85`, `2`), or in exponent form
/// when plain would be a wall of digits (`1e-300`, `1e20`).
pub fn fmt_num(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e9).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Seconds as a float for display.
pub fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

/// A byte count that (de)serializes from either an integer or a string with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", human_bytes(self.0))
    }
}

/// Exact if possible: `135GB`, `10GiB`, else the plain byte count.
pub fn human_bytes(b: u64) -> String {
    for (m, u) in [
        (TIB, "TiB"),
        (TB, "TB"),
        (GIB, "GiB"),
        (GB, "GB"),
        (MIB, "MiB"),
        (MB, "MB"),
    ] {
        if b >= m && b % m == 0 {
            return format!("{}{u}", b / m);
        }
    }
    format!("{b}")
}

impl serde::Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// One visitor for "a number or a string with a unit": `from_str` parses strings,
/// `from_num` converts plain numbers (bytes, bytes/s or seconds).
struct QtyVisitor<T> {
    from_str: fn(&str) -> Result<T, UnitError>,
    from_num: fn(f64) -> Result<T, UnitError>,
    /// A whole number read exactly (byte counts past 2^53 lose bits through f64: a
    /// captured `9223372036854775807` read back as another number); `None` goes through
    /// `from_num`.
    from_u64: Option<fn(u64) -> Result<T, UnitError>>,
    expecting: &'static str,
}

impl<'de, T> serde::de::Visitor<'de> for QtyVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        (self.from_str)(v).map_err(E::custom)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        match self.from_u64 {
            Some(f) => f(v).map_err(E::custom),
            None => (self.from_num)(v as f64).map_err(E::custom),
        }
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        (self.from_num)(v as f64).map_err(E::custom)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<T, E> {
        (self.from_num)(v).map_err(E::custom)
    }
}

fn bytes_from_num(v: f64) -> Result<u64, UnitError> {
    if v < 0.0 {
        Err(UnitError(format!(
            "{v} is negative: a size must be at least 0"
        )))
    } else if v.is_nan() || v >= u64::MAX as f64 {
        // 1e308 saturated to 16 EiB without a word.
        Err(UnitError(format!(
            "{} bytes is more than a 64-bit count holds (16 EiB)",
            fmt_num(v)
        )))
    } else {
        Ok(v.round() as u64)
    }
}

impl<'de> serde::Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QtyVisitor {
            from_str: parse_bytes,
            from_num: bytes_from_num,
            from_u64: Some(Ok),
            expecting: "a byte size such as `880GB`, `135GiB` or 44928",
        })
        .map(ByteSize)
    }
}

/// A bandwidth in bytes/s that deserializes from `5GB/s` or a number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Bandwidth(pub f64);

impl serde::Serialize for Bandwidth {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Bandwidth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QtyVisitor {
            from_str: parse_bandwidth,
            from_num: |v| {
                if v > 0.0 && v.is_finite() {
                    Ok(v)
                } else {
                    Err(UnitError(format!(
                        "{} must be a finite rate greater than 0",
                        fmt_num(v)
                    )))
                }
            },
            from_u64: None,
            expecting: "a bandwidth such as `5GB/s` or a number of bytes per second",
        })
        .map(Bandwidth)
    }
}

/// A duration in nanoseconds that deserializes from `20s`, `150ms` or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Duration(pub Nanos);

impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ns", self.0))
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QtyVisitor {
            from_str: parse_duration,
            // A bare number is seconds, under the same bounds as `20s` (1e300 would
            // have saturated the clock).
            from_num: secs_to_ns,
            from_u64: None,
            expecting: "a duration such as `20s`, `150ms` or a number of seconds",
        })
        .map(Duration)
    }
}

/// A bare number of seconds as nanoseconds, under [`parse_duration`]'s bounds.
fn secs_to_ns(v: f64) -> Result<Nanos, UnitError> {
    if v < 0.0 {
        return Err(UnitError(format!(
            "{v} is negative: a duration must be at least 0"
        )));
    }
    let ns = v * 1e9;
    if ns.is_nan() || ns > MAX_DURATION_NS as f64 {
        return Err(UnitError(format!(
            "{v} s is longer than {} s (116 days): no start-up or trace step takes that long",
            MAX_DURATION_NS / NS_PER_S
        )));
    }
    Ok(ns.round() as Nanos)
}

/// A per-token or per-operation duration (`tokenize_per_token`, a copy's run overhead):
/// the unit must be written (`6756ns`, `4us`). A bare number would be seconds — 6756
/// meant as nanoseconds is 6756 s a token — so it is refused, naming the unit to write.
pub fn duration_with_unit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(QtyVisitor {
        from_str: |s: &str| {
            let (_, unit) = split_number(s)?;
            if unit.is_empty() {
                return Err(UnitError(format!(
                    "`{s}` has no unit: write one (`{s}ns`, `{s}us`): a bare number would be seconds"
                )));
            }
            parse_duration(s)
        },
        from_num: |v| {
            Err(UnitError(format!(
                "{v} has no unit: write one (`{v}ns`, `{v}us`): a bare number would be seconds"
            )))
        },
        from_u64: None,
        expecting: "a duration with its unit, such as `6756ns` or `4us`",
    })
    .map(Duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    /// A whole number of bytes reads back exactly past 2^53 (cgroup v1's "no limit",
    /// i64::MAX, captured and read again), and a number past 16 EiB is refused, not
    /// saturated.
    fn byte_counts_are_exact_and_bounded() {
        let b: ByteSize = serde_json::from_str("9223372036854775807").unwrap();
        assert_eq!(b, ByteSize(i64::MAX as u64));
        let b: ByteSize = serde_json::from_str("9007199254740993").unwrap();
        assert_eq!(b, ByteSize((1 << 53) + 1));
        let e = serde_json::from_str::<ByteSize>("1e308")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1e308 bytes is more than a 64-bit count holds"),
            "{e}"
        );
        let e = serde_json::from_str::<Bandwidth>("1e309")
            .unwrap_err()
            .to_string();
        assert!(!e.is_empty());
        assert!(
            parse_bandwidth("1e300GB/s")
                .unwrap_err()
                .0
                .contains("finite")
        );
    }

    #[test]
    fn bytes_parse_exact() {
        assert_eq!(parse_bytes("880GB").unwrap(), 880_000_000_000);
        assert_eq!(parse_bytes("135GiB").unwrap(), 135 * GIB);
        assert_eq!(parse_bytes("44928").unwrap(), 44_928);
        assert_eq!(parse_bytes("1.5TB").unwrap(), 1_500_000_000_000);
        assert_eq!(parse_bytes("1772 GiB").unwrap(), 1772 * GIB);
        assert!(parse_bytes("-5GB").unwrap_err().0.contains("negative"));
        assert!(parse_bytes("5 GBs").unwrap_err().0.contains("unknown unit"));
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn bandwidth_and_duration() {
        assert_eq!(parse_bandwidth("5GB/s").unwrap(), 5e9);
        assert_eq!(parse_bandwidth("10GiB/s").unwrap(), 10.0 * GIB as f64);
        assert!(parse_bandwidth("0GB/s").is_err());
        assert!(parse_bandwidth("5GB").is_err());
        assert_eq!(parse_duration("20s").unwrap(), 20 * NS_PER_S);
        assert_eq!(parse_duration("6.67us").unwrap(), 6_670);
        assert_eq!(parse_duration("150ms").unwrap(), 150 * NS_PER_MS);
        assert_eq!(parse_duration("2min").unwrap(), 120 * NS_PER_S);
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn gb_like_python() {
        assert_eq!(fmt_gb(24_770_000_000), "24.77");
        assert_eq!(fmt_gb(-500_000_000), "-0.50");
        assert_eq!(fmt_gb(135_000_000_000), "135.00");
    }
}
