//! The scalar functions weir knows ([`ScalarFunc`]): their names in SQL and their aliases.
//! What each computes is in the kernels of [`crate::functions`].

use crate::types::DataType;
use serde::{Deserialize, Serialize};

/// A scalar (row-by-row) function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarFunc {
    /// `abs(x)`: same numeric type.
    Abs,
    /// `round(x)` or `round(x, digits)`, halves away from zero: same numeric type.
    Round,
    /// `floor(x)`: same numeric type.
    Floor,
    /// `ceil(x)` / `ceiling(x)`: same numeric type.
    Ceil,
    /// `mod(a, b)`: as `a % b`, NULL when `b` is 0.
    Mod,
    /// `power(a, b)`: DOUBLE.
    Power,
    /// `sqrt(x)`: DOUBLE; an error for negative `x`.
    Sqrt,
    /// `sign(x)`: -1, 0 or 1 of the same numeric type.
    Sign,
    /// `lower(s)`.
    Lower,
    /// `upper(s)`.
    Upper,
    /// `length(s)` / `char_length(s)`: characters, BIGINT.
    Length,
    /// `substring(s, from [, for])`: 1-based character positions, as PostgreSQL.
    Substring,
    /// `trim(s [, chars])`: both ends (spaces by default).
    Trim,
    /// `ltrim(s [, chars])`: the start.
    LTrim,
    /// `rtrim(s [, chars])`: the end.
    RTrim,
    /// `replace(s, from, to)`: every occurrence.
    Replace,
    /// `strpos(s, sub)` / `position(sub IN s)`: 1-based character position, 0 if absent.
    StrPos,
    /// `concat(a, ...)`: text of the non-NULL arguments (never NULL).
    Concat,
    /// `a || b`: NULL if either side is.
    ConcatOp,
    /// `starts_with(s, prefix)`: BOOLEAN.
    StartsWith,
    /// `coalesce(a, ...)`: the first non-NULL argument.
    Coalesce,
    /// `nullif(a, b)`: NULL where `a = b`, else `a`.
    NullIf,
    /// `EXTRACT(field FROM x)` / `date_part('field', x)` of a DATE or TIMESTAMP: BIGINT.
    /// The first argument is the field's name as text.
    Extract,
    /// `EXTRACT(SECOND FROM t)` and `EXTRACT(EPOCH FROM t)` of a TIMESTAMP: the seconds with
    /// their microseconds, exact, DECIMAL(20, 6) (PostgreSQL's numeric: `59.250000`). Bound
    /// from EXTRACT (and `date_part` of those fields, as DOUBLE), not callable by name.
    ExtractSeconds,
    /// `EXTRACT(MILLISECOND FROM t)` of a TIMESTAMP: the seconds field in milliseconds with
    /// its microseconds, DECIMAL(8, 3) (`59250.000`). Bound as [`ScalarFunc::ExtractSeconds`].
    ExtractMilliseconds,
    /// `date_trunc('field', x)`: the start of the year, quarter, month, week, day (hour,
    /// minute, second) containing `x`, of `x`'s type.
    DateTrunc,
    /// `x + INTERVAL`: `add_interval(x, months, days, microseconds)` of a DATE or
    /// TIMESTAMP, of `x`'s type (a DATE takes only months and days). Months clamp to the
    /// month's end, as PostgreSQL. Bound from `x ± INTERVAL '...'`, not callable by name.
    AddInterval,
    /// `too_many_rows(x)`: the error "scalar subquery returned more than one row" for any row
    /// it is evaluated on, typed as `x`. The branch a correlated scalar subquery takes for a
    /// row with more than one match; not callable by name.
    TooManyRows,
    /// `repeat(s, n)`: `s` `n` times (empty for `n <= 0`).
    Repeat,
    /// `lpad(s, n [, fill])`: `s` made `n` characters long, cut or padded on the left with
    /// `fill` (a space by default) repeated, as PostgreSQL.
    LPad,
    /// `rpad(s, n [, fill])`: as `lpad`, padded on the right.
    RPad,
    /// `a & b` on BIGINT: bitwise and. Bound from the operator, not callable by name.
    BitAnd,
    /// `a | b` on BIGINT: bitwise or.
    BitOr,
    /// `a << n` on BIGINT: shifted left `n` bits, as SQLite: bits shifted past the 64th are
    /// lost (`1 << 63` is the smallest BIGINT), `n` of 64 or more gives 0, and a negative `n`
    /// shifts right.
    ShiftLeft,
    /// `a >> n` on BIGINT: shifted right `n` bits, keeping the sign (`n` of 64 or more gives 0
    /// or -1); a negative `n` shifts left.
    ShiftRight,
    /// `~a` on BIGINT: bitwise not.
    BitNot,
    /// `left(s, n)`: the first `n` characters (all but the last `-n` for a negative `n`).
    Left,
    /// `right(s, n)`: the last `n` characters (all but the first `-n` for a negative `n`).
    Right,
    /// `split_part(s, delimiter, n)`: field `n` from 1 (from the end when negative), "" past
    /// the last; `n` = 0 is an error.
    SplitPart,
    /// `initcap(s)`: each word's first letter upper case, the others lower case.
    InitCap,
    /// `reverse(s)`: the characters in reverse order.
    Reverse,
    /// `concat_ws(separator, a, ...)`: the non-NULL values as text joined by `separator`
    /// (NULL when it is).
    ConcatWs,
    /// `greatest(a, ...)`: the largest non-NULL argument (NULL when all are), of the type
    /// the arguments meet at.
    Greatest,
    /// `least(a, ...)`: the smallest non-NULL argument, as `greatest`.
    Least,
    /// `trunc(x)` or `trunc(x, digits)`: toward zero, of `x`'s numeric type.
    Trunc,
    /// `ascii(s)`: the code point of the first character (0 for ""), BIGINT.
    Ascii,
    /// `chr(n)`: the character of code point `n`.
    Chr,
    /// `translate(s, from, to)`: each character of `from` replaced by the one at its place in `to`, or removed when `to` is shorter.
    Translate,
    /// `octet_length(s)`: bytes of UTF-8, BIGINT.
    OctetLength,
    /// A DOUBLE function of logarithms, exponentials, roots or trigonometry ([`MathFunc`]).
    Math(MathFunc),
    /// `make_date(year, month, day)`: a DATE; a field out of range is an error.
    MakeDate,
    /// `make_timestamp(year, month, day, hour, minute, seconds)`: a TIMESTAMP (`seconds` with
    /// a fraction).
    MakeTimestamp,
    /// `to_timestamp(seconds)`: the TIMESTAMP (UTC) that many seconds after 1970-01-01.
    ToTimestamp,
    /// `regexp_like(s, pattern [, flags])` (and the operators `~`, `~*`): whether `pattern`
    /// matches somewhere in `s`, BOOLEAN; flags `i` (case-insensitive) and `c`.
    RegexpLike,
    /// `regexp_replace(s, pattern, replacement [, flags])`: the first match (every match with
    /// flag `g`) replaced; `\1`..`\9` and `\&` in `replacement` are the groups and the match.
    RegexpReplace,
    /// `substring(s FROM pattern)` with a text pattern (a regular expression), and
    /// `substring(s FROM pattern FOR escape)` (`SIMILAR TO`'s, through `similar_to_escape`):
    /// the text the first parenthesized group matched, or the whole match when the pattern
    /// has no group; NULL when nothing matches (or the group took no part in the match).
    RegexpSubstring,
    /// `regexp_count(s, pattern [, start [, flags]])`: the matches from character `start`,
    /// BIGINT.
    RegexpCount,
    /// `regexp_substr(s, pattern [, start [, n [, flags [, subexpr]]]])`: the `n`-th match
    /// (or its group `subexpr`) from character `start`; NULL when there is none.
    RegexpSubstr,
    /// `regexp_instr(s, pattern [, start [, n [, endoption [, flags [, subexpr]]]]])`: the
    /// character position where the `n`-th match (or its group) starts, or after its end with
    /// `endoption` 1; 0 when there is none. BIGINT.
    RegexpInstr,
    /// `similar_to_escape(pattern [, escape])`: the regular expression (for `regexp_like`)
    /// that matches what the SQL pattern of `SIMILAR TO` matches; `escape` is one character,
    /// a backslash when absent, none when empty.
    SimilarToEscape,
    /// `md5(s)`: the MD5 digest of the text's UTF-8 bytes, as 32 lowercase hex digits.
    Md5,
    /// `to_char(date or timestamp, template)`: the value written by a PostgreSQL template
    /// (`'YYYY-MM-DD HH24:MI:SS'`).
    ToChar,
    /// `random()`: a DOUBLE drawn uniformly from [0, 1), a new one for each row and call
    /// ([`ScalarFunc::is_volatile`]).
    Random,
    /// `to_date(text, template)`: the DATE read from the text by a PostgreSQL template
    /// (`'DD.MM.YYYY'`); a field out of range is an error.
    ToDate,
    /// `to_timestamp(text, template)`: the TIMESTAMP read from the text by a PostgreSQL
    /// template (`'YYYY-MM-DD HH24:MI:SS'`). Bound from `to_timestamp` with two arguments.
    ToTimestampText,
    /// `format(template, args...)`: the template with `%s`, `%I` and `%L` replaced by the
    /// arguments as text, identifiers and literals (NULL only for a NULL template).
    Format,
    /// `quote_ident(s)`: `s` as an SQL identifier, in double quotes when it must be.
    QuoteIdent,
    /// `quote_literal(s)`: `s` as an SQL literal in single quotes (NULL for NULL).
    QuoteLiteral,
    /// `quote_nullable(s)`: as `quote_literal`, but the text `NULL` for NULL.
    QuoteNullable,
    /// `clock_timestamp()`: the TIMESTAMP (UTC) of the moment it is evaluated, a new one
    /// for each row and call ([`ScalarFunc::is_volatile`]), unlike `now()`, which is the
    /// statement's.
    ClockTimestamp,
    /// `to_number(text, template)`: the number read from the text by a PostgreSQL numeric
    /// template (`'9G999D99'`), a DECIMAL(38, s) with the template's `s` decimals (the
    /// binder reads them from the constant template; by name the function is `ToNumber(0)`).
    ToNumber(u8),
    /// `gcd(a, b)`: the greatest common divisor of two BIGINTs, never negative.
    Gcd,
    /// `lcm(a, b)`: the least common multiple of two BIGINTs, never negative.
    Lcm,
    /// `to_hex(n)`: a BIGINT in hexadecimal digits (a negative one as its 64 bits).
    ToHex,
    /// `width_bucket(x, low, high, count)`: which of `count` equal buckets between `low` and
    /// `high` holds `x` (0 before `low`, `count + 1` from `high` on), BIGINT.
    WidthBucket,
    /// `num_nulls(a, ...)`: how many arguments are NULL, BIGINT.
    NumNulls,
    /// `num_nonnulls(a, ...)`: how many arguments are not NULL, BIGINT.
    NumNonNulls,
    /// `overlay(s PLACING r FROM start [FOR count])`: `s` with `count` characters from
    /// `start` (as many as `r` has by default) replaced by `r`.
    Overlay,
}

impl ScalarFunc {
    /// The type a call computes from arguments of these types (an untyped NULL argument
    /// takes the type the function works on): the one table of result types, read by the
    /// planner when it binds a call and by evaluation when it runs one.
    pub fn result_type(self, types: &[Option<DataType>]) -> DataType {
        use ScalarFunc as F;
        let first = types.iter().flatten().next().copied();
        match self {
            F::Floor | F::Ceil | F::Round | F::Trunc if types.len() == 1 => match first {
                Some(DataType::Decimal { precision, .. }) => DataType::decimal(precision, 0),
                other => other.unwrap_or(DataType::Int64),
            },
            F::Extract => DataType::Int64,
            F::ExtractSeconds => DataType::decimal(20, 6),
            F::ExtractMilliseconds => DataType::decimal(8, 3),
            F::DateTrunc => types
                .get(1)
                .copied()
                .flatten()
                .unwrap_or(DataType::Timestamp),
            F::AddInterval => first.unwrap_or(DataType::Date),
            F::Abs | F::Round | F::Trunc | F::Floor | F::Ceil | F::Sign | F::Mod => {
                if types.iter().flatten().any(|t| *t == DataType::Float64) {
                    DataType::Float64
                } else {
                    first.unwrap_or(DataType::Int64)
                }
            }
            F::Power | F::Sqrt | F::Random => DataType::Float64,
            F::Math(_) => DataType::Float64,
            F::MakeDate | F::ToDate => DataType::Date,
            F::MakeTimestamp | F::ToTimestamp | F::ToTimestampText | F::ClockTimestamp => {
                DataType::Timestamp
            }
            F::Length | F::StrPos | F::Ascii | F::OctetLength => DataType::Int64,
            F::RegexpCount | F::RegexpInstr => DataType::Int64,
            F::BitAnd | F::BitOr | F::ShiftLeft | F::ShiftRight | F::BitNot => DataType::Int64,
            F::ToNumber(scale) => DataType::decimal(38, scale),
            F::Gcd | F::Lcm | F::WidthBucket | F::NumNulls | F::NumNonNulls => DataType::Int64,
            F::StartsWith | F::RegexpLike => DataType::Boolean,
            F::Coalesce | F::NullIf | F::TooManyRows | F::Greatest | F::Least => {
                first.unwrap_or(DataType::Int64)
            }
            _ => DataType::Utf8,
        }
    }

    /// Whether the function gives a new value at each call with the same arguments
    /// (`random()`, `clock_timestamp()`), so it is never evaluated once for many rows.
    pub fn is_volatile(self) -> bool {
        matches!(self, ScalarFunc::Random | ScalarFunc::ClockTimestamp)
    }

    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarFunc::Abs => "abs",
            ScalarFunc::Round => "round",
            ScalarFunc::Floor => "floor",
            ScalarFunc::Ceil => "ceil",
            ScalarFunc::Mod => "mod",
            ScalarFunc::Power => "power",
            ScalarFunc::Sqrt => "sqrt",
            ScalarFunc::Sign => "sign",
            ScalarFunc::Lower => "lower",
            ScalarFunc::Upper => "upper",
            ScalarFunc::Length => "length",
            ScalarFunc::Substring => "substring",
            ScalarFunc::Trim => "trim",
            ScalarFunc::LTrim => "ltrim",
            ScalarFunc::RTrim => "rtrim",
            ScalarFunc::Replace => "replace",
            ScalarFunc::StrPos => "strpos",
            ScalarFunc::Concat => "concat",
            ScalarFunc::ConcatOp => "||",
            ScalarFunc::StartsWith => "starts_with",
            ScalarFunc::Coalesce => "coalesce",
            ScalarFunc::NullIf => "nullif",
            ScalarFunc::Extract => "date_part",
            ScalarFunc::ExtractSeconds | ScalarFunc::ExtractMilliseconds => "extract",
            ScalarFunc::DateTrunc => "date_trunc",
            ScalarFunc::AddInterval => "add_interval",
            ScalarFunc::TooManyRows => "too_many_rows",
            ScalarFunc::Repeat => "repeat",
            ScalarFunc::LPad => "lpad",
            ScalarFunc::RPad => "rpad",
            ScalarFunc::BitAnd => "&",
            ScalarFunc::BitOr => "|",
            ScalarFunc::ShiftLeft => "<<",
            ScalarFunc::ShiftRight => ">>",
            ScalarFunc::BitNot => "~",
            ScalarFunc::Left => "left",
            ScalarFunc::Right => "right",
            ScalarFunc::SplitPart => "split_part",
            ScalarFunc::InitCap => "initcap",
            ScalarFunc::Reverse => "reverse",
            ScalarFunc::ConcatWs => "concat_ws",
            ScalarFunc::Greatest => "greatest",
            ScalarFunc::Least => "least",
            ScalarFunc::Trunc => "trunc",
            ScalarFunc::Ascii => "ascii",
            ScalarFunc::Chr => "chr",
            ScalarFunc::Translate => "translate",
            ScalarFunc::OctetLength => "octet_length",
            ScalarFunc::Math(m) => m.name(),
            ScalarFunc::MakeDate => "make_date",
            ScalarFunc::MakeTimestamp => "make_timestamp",
            ScalarFunc::ToTimestamp | ScalarFunc::ToTimestampText => "to_timestamp",
            ScalarFunc::ToDate => "to_date",
            ScalarFunc::Format => "format",
            ScalarFunc::QuoteIdent => "quote_ident",
            ScalarFunc::QuoteLiteral => "quote_literal",
            ScalarFunc::QuoteNullable => "quote_nullable",
            ScalarFunc::ToNumber(_) => "to_number",
            ScalarFunc::Gcd => "gcd",
            ScalarFunc::Lcm => "lcm",
            ScalarFunc::ToHex => "to_hex",
            ScalarFunc::WidthBucket => "width_bucket",
            ScalarFunc::NumNulls => "num_nulls",
            ScalarFunc::NumNonNulls => "num_nonnulls",
            ScalarFunc::Overlay => "overlay",
            ScalarFunc::RegexpLike => "regexp_like",
            ScalarFunc::RegexpReplace => "regexp_replace",
            ScalarFunc::SimilarToEscape => "similar_to_escape",
            ScalarFunc::RegexpCount => "regexp_count",
            ScalarFunc::RegexpSubstr => "regexp_substr",
            ScalarFunc::RegexpInstr => "regexp_instr",
            ScalarFunc::RegexpSubstring => "substring",
            ScalarFunc::Md5 => "md5",
            ScalarFunc::ToChar => "to_char",
            ScalarFunc::Random => "random",
            ScalarFunc::ClockTimestamp => "clock_timestamp",
        }
    }

    /// The function of a SQL name (case-insensitive), including aliases.
    pub fn from_name(name: &str) -> Option<ScalarFunc> {
        Some(match name.to_ascii_lowercase().as_str() {
            "abs" => ScalarFunc::Abs,
            "round" => ScalarFunc::Round,
            "floor" => ScalarFunc::Floor,
            "ceil" | "ceiling" => ScalarFunc::Ceil,
            "mod" => ScalarFunc::Mod,
            "power" | "pow" => ScalarFunc::Power,
            "sqrt" => ScalarFunc::Sqrt,
            "sign" => ScalarFunc::Sign,
            "lower" => ScalarFunc::Lower,
            "upper" => ScalarFunc::Upper,
            "length" | "char_length" | "character_length" => ScalarFunc::Length,
            "substring" | "substr" => ScalarFunc::Substring,
            "trim" | "btrim" => ScalarFunc::Trim,
            "ltrim" => ScalarFunc::LTrim,
            "rtrim" => ScalarFunc::RTrim,
            "replace" => ScalarFunc::Replace,
            "strpos" => ScalarFunc::StrPos,
            "concat" => ScalarFunc::Concat,
            "starts_with" => ScalarFunc::StartsWith,
            "coalesce" => ScalarFunc::Coalesce,
            "nullif" => ScalarFunc::NullIf,
            "date_part" => ScalarFunc::Extract,
            "date_trunc" => ScalarFunc::DateTrunc,
            "repeat" => ScalarFunc::Repeat,
            "lpad" => ScalarFunc::LPad,
            "rpad" => ScalarFunc::RPad,
            "left" => ScalarFunc::Left,
            "right" => ScalarFunc::Right,
            "split_part" => ScalarFunc::SplitPart,
            "initcap" => ScalarFunc::InitCap,
            "reverse" => ScalarFunc::Reverse,
            "concat_ws" => ScalarFunc::ConcatWs,
            "greatest" => ScalarFunc::Greatest,
            "least" => ScalarFunc::Least,
            "trunc" => ScalarFunc::Trunc,
            "ascii" => ScalarFunc::Ascii,
            "chr" => ScalarFunc::Chr,
            "translate" => ScalarFunc::Translate,
            "octet_length" => ScalarFunc::OctetLength,
            "regexp_like" => ScalarFunc::RegexpLike,
            "regexp_replace" => ScalarFunc::RegexpReplace,
            "similar_to_escape" => ScalarFunc::SimilarToEscape,
            "regexp_count" => ScalarFunc::RegexpCount,
            "regexp_substr" => ScalarFunc::RegexpSubstr,
            "regexp_instr" => ScalarFunc::RegexpInstr,
            "md5" => ScalarFunc::Md5,
            "to_char" => ScalarFunc::ToChar,
            "random" => ScalarFunc::Random,
            "clock_timestamp" => ScalarFunc::ClockTimestamp,
            "make_date" => ScalarFunc::MakeDate,
            "make_timestamp" => ScalarFunc::MakeTimestamp,
            "to_timestamp" => ScalarFunc::ToTimestamp,
            "to_date" => ScalarFunc::ToDate,
            "format" => ScalarFunc::Format,
            "quote_ident" => ScalarFunc::QuoteIdent,
            "quote_literal" => ScalarFunc::QuoteLiteral,
            "quote_nullable" => ScalarFunc::QuoteNullable,
            "to_number" => ScalarFunc::ToNumber(0),
            "gcd" => ScalarFunc::Gcd,
            "lcm" => ScalarFunc::Lcm,
            "to_hex" => ScalarFunc::ToHex,
            "width_bucket" => ScalarFunc::WidthBucket,
            "num_nulls" => ScalarFunc::NumNulls,
            "num_nonnulls" => ScalarFunc::NumNonNulls,
            "overlay" => ScalarFunc::Overlay,
            other => return MathFunc::from_name(other).map(ScalarFunc::Math),
        })
    }
}

/// The DOUBLE functions of logarithms, exponentials, roots and trigonometry, as PostgreSQL
/// has them: DOUBLE arguments, a DOUBLE result, an error outside a function's domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MathFunc {
    /// `ln(x)`: the natural logarithm; an error for `x <= 0`.
    Ln,
    /// `log(x)`: the base-10 logarithm, or `log(b, x)` in base `b`.
    Log,
    /// `log10(x)`: the base-10 logarithm.
    Log10,
    /// `exp(x)`: e to the power `x`.
    Exp,
    /// `cbrt(x)`: the cube root.
    Cbrt,
    /// `sin(x)` (radians).
    Sin,
    /// `cos(x)` (radians).
    Cos,
    /// `tan(x)` (radians).
    Tan,
    /// `asin(x)`: radians; an error outside -1..1.
    Asin,
    /// `acos(x)`: radians; an error outside -1..1.
    Acos,
    /// `atan(x)`: radians.
    Atan,
    /// `atan2(y, x)`: the angle of point (x, y) in radians.
    Atan2,
    /// `degrees(x)`: radians to degrees.
    Degrees,
    /// `radians(x)`: degrees to radians.
    Radians,
    /// `pi()`.
    Pi,
}

impl MathFunc {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            MathFunc::Ln => "ln",
            MathFunc::Log => "log",
            MathFunc::Log10 => "log10",
            MathFunc::Exp => "exp",
            MathFunc::Cbrt => "cbrt",
            MathFunc::Sin => "sin",
            MathFunc::Cos => "cos",
            MathFunc::Tan => "tan",
            MathFunc::Asin => "asin",
            MathFunc::Acos => "acos",
            MathFunc::Atan => "atan",
            MathFunc::Atan2 => "atan2",
            MathFunc::Degrees => "degrees",
            MathFunc::Radians => "radians",
            MathFunc::Pi => "pi",
        }
    }

    /// The function of a lowercase SQL name.
    fn from_name(name: &str) -> Option<MathFunc> {
        Some(match name {
            "ln" => MathFunc::Ln,
            "log" => MathFunc::Log,
            "log10" => MathFunc::Log10,
            "exp" => MathFunc::Exp,
            "cbrt" => MathFunc::Cbrt,
            "sin" => MathFunc::Sin,
            "cos" => MathFunc::Cos,
            "tan" => MathFunc::Tan,
            "asin" => MathFunc::Asin,
            "acos" => MathFunc::Acos,
            "atan" => MathFunc::Atan,
            "atan2" => MathFunc::Atan2,
            "degrees" => MathFunc::Degrees,
            "radians" => MathFunc::Radians,
            "pi" => MathFunc::Pi,
            _ => return None,
        })
    }

    /// The fewest and most arguments it takes (all DOUBLE).
    pub fn arity(self) -> (usize, usize) {
        match self {
            MathFunc::Log => (1, 2),
            MathFunc::Atan2 => (2, 2),
            MathFunc::Pi => (0, 0),
            _ => (1, 1),
        }
    }
}
