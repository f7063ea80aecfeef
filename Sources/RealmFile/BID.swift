/// Widening of the BID32 and BID64 decimals that format 24 stores in narrow Decimal128 leaves to BID128, as
/// realm-core's `Decimal128(Bid32)` and `Decimal128(Bid64)` do (through Intel's `bid32_to_bid128`): the same sign,
/// coefficient and exponent, rebiased; NaN payloads scaled to the wider precision; realm-core's null markers
/// (0x7c0000aa, 0x7c000000000000aa) to the BID128 null.
///
/// IEEE 754-2008 BID layouts (sign, combination field, coefficient):
/// - BID32: exponent bias 101, 7 digits; coefficient in bits 0-22, or (0b100 << 21 | bits 0-20) when bits 29-30 are 11.
/// - BID64: bias 398, 16 digits; bits 0-52, or (0b100 << 51 | bits 0-50) when bits 61-62 are 11.
/// - BID128: bias 6176, 34 digits; exponent in bits 49-62 of the high word, coefficient in the 113 low bits.
enum BID {
    private static let bias128: Int64 = 6176

    static func decimal128(bid32 x: UInt32) -> RealmFileDecimal128 {
        if x == 0x7c00_00aa { return .null }
        let sign = UInt64(x >> 31) << 63
        if x & 0x7800_0000 == 0x7800_0000 {
            if x & 0x7c00_0000 == 0x7c00_0000 {  // NaN: keep the quiet/signaling bits, scale the payload by 10^27
                var payload = UInt64(x & 0x000f_ffff)
                if payload > 999_999 { payload = 0 }
                let (high, low) = (payload * 100_000_000).multipliedFullWidth(by: 10_000_000_000_000_000_000)
                return RealmFileDecimal128(low: low, high: UInt64(x & 0xfe00_0000) << 32 | high)
            }
            return RealmFileDecimal128(low: 0, high: sign | 0x7800_0000_0000_0000)
        }
        let exponent: Int64
        var coefficient: UInt64
        if x & 0x6000_0000 == 0x6000_0000 {
            exponent = Int64((x >> 21) & 0xff)
            coefficient = UInt64(x & 0x001f_ffff) | 0x0080_0000
        } else {
            exponent = Int64((x >> 23) & 0xff)
            coefficient = UInt64(x & 0x007f_ffff)
        }
        if coefficient > 9_999_999 { coefficient = 0 }  // non-canonical: zero
        return finite(sign: sign, exponent: exponent - 101, coefficient: coefficient)
    }

    static func decimal128(bid64 x: UInt64) -> RealmFileDecimal128 {
        if x == 0x7c00_0000_0000_00aa { return .null }
        let sign = x & (1 << 63)
        if x & 0x7800_0000_0000_0000 == 0x7800_0000_0000_0000 {
            if x & 0x7c00_0000_0000_0000 == 0x7c00_0000_0000_0000 {  // NaN: scale the payload by 10^18
                var payload = x & 0x0003_ffff_ffff_ffff
                if payload > 999_999_999_999_999 { payload = 0 }
                let (high, low) = payload.multipliedFullWidth(by: 1_000_000_000_000_000_000)
                return RealmFileDecimal128(low: low, high: (x & 0xfe00_0000_0000_0000) | high)
            }
            return RealmFileDecimal128(low: 0, high: sign | 0x7800_0000_0000_0000)
        }
        let exponent: Int64
        var coefficient: UInt64
        if x & 0x6000_0000_0000_0000 == 0x6000_0000_0000_0000 {
            exponent = Int64((x >> 51) & 0x3ff)
            coefficient = (x & 0x0007_ffff_ffff_ffff) | 0x0020_0000_0000_0000
        } else {
            exponent = Int64((x >> 53) & 0x3ff)
            coefficient = x & 0x001f_ffff_ffff_ffff
        }
        if coefficient > 9_999_999_999_999_999 { coefficient = 0 }
        return finite(sign: sign, exponent: exponent - 398, coefficient: coefficient)
    }

    private static func finite(sign: UInt64, exponent: Int64, coefficient: UInt64) -> RealmFileDecimal128 {
        let biased = UInt64(exponent + bias128)
        return RealmFileDecimal128(low: coefficient, high: sign | biased << 49)
    }
}
