/// SHA-224 and HMAC-SHA224 (FIPS 180-4, RFC 2104), which Realm's encrypted files use to authenticate each page and
/// swift-crypto does not offer. SHA-224 is SHA-256 with other initial values, truncated to 28 bytes.
package enum SHA224 {
    static let digestBytes = 28
    static let blockBytes = 64

    private static let initial: [UInt32] = [
        0xc105_9ed8, 0x367c_d507, 0x3070_dd17, 0xf70e_5939, 0xffc0_0b31, 0x6858_1511, 0x64f9_8fa7, 0xbefa_4fa4,
    ]

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// The SHA-224 digest of `message`.
    static func hash(_ message: some Collection<UInt8>) -> [UInt8] {
        var state = initial
        var block = [UInt8]()
        block.reserveCapacity(blockBytes)
        var schedule = [UInt32](repeating: 0, count: 64)
        for byte in message {
            block.append(byte)
            if block.count == blockBytes {
                compress(&state, block, &schedule)
                block.removeAll(keepingCapacity: true)
            }
        }
        let bitCount = UInt64(message.count) &* 8
        block.append(0x80)
        if block.count > blockBytes - 8 {
            block += [UInt8](repeating: 0, count: blockBytes - block.count)
            compress(&state, block, &schedule)
            block.removeAll(keepingCapacity: true)
        }
        block += [UInt8](repeating: 0, count: blockBytes - 8 - block.count)
        for shift in stride(from: 56, through: 0, by: -8) { block.append(UInt8(truncatingIfNeeded: bitCount >> UInt64(shift))) }
        compress(&state, block, &schedule)
        var digest = [UInt8]()
        digest.reserveCapacity(digestBytes)
        for word in state.prefix(7) {
            digest += [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
        return digest
    }

    /// HMAC-SHA224 of `message` under `key` (RFC 2104; a key longer than a block is hashed first).
    package static func hmac(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var keyBlock = key.count > blockBytes ? hash(key) : Array(key)
        keyBlock += [UInt8](repeating: 0, count: blockBytes - keyBlock.count)
        let inner = hash(keyBlock.map { $0 ^ 0x36 } + Array(message))
        return hash(keyBlock.map { $0 ^ 0x5c } + inner)
    }

    private static func compress(_ state: inout [UInt32], _ block: [UInt8], _ w: inout [UInt32]) {
        for i in 0..<16 {
            w[i] = UInt32(block[4 * i]) << 24 | UInt32(block[4 * i + 1]) << 16 | UInt32(block[4 * i + 2]) << 8 | UInt32(block[4 * i + 3])
        }
        for i in 16..<64 {
            let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
            let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var a = state[0], b = state[1], c = state[2], d = state[3]
        var e = state[4], f = state[5], g = state[6], h = state[7]
        for i in 0..<64 {
            let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
            let choice = (e & f) ^ (~e & g)
            let t1 = h &+ s1 &+ choice &+ roundConstants[i] &+ w[i]
            let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ majority
            h = g; g = f; f = e; e = d &+ t1
            d = c; c = b; b = a; a = t1 &+ t2
        }
        state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
        state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}
