import RealmFile
import Crypto
import _CryptoExtras

extension RealmFileWriter {
    /// `plain` encrypted as realm-core encrypts a file (``DecryptedRealmImage`` describes the layout): for tests,
    /// fuzz seeds and the Bench. Pages listed in `interrupted` carry their HMAC in the entry's second slot, as
    /// after a write interrupted between the IV table and the page; pages in `unwritten` have never been written.
    package static func encrypt(_ plain: [UInt8], key: [UInt8], interrupted: Set<Int> = [], unwritten: Set<Int> = []) throws -> [UInt8] {
        guard key.count == 64 else { fatalError("RealmFileWriter.encrypt: a Realm key has 64 bytes, not \(key.count)") }
        func littleEndian(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) } }
        var data = plain
        while data.count % 4096 != 0 { data.append(0) }
        let pages = data.count / 4096
        let aesKey = SymmetricKey(data: key[0..<32])
        var file: [UInt8] = []
        for block in stride(from: 0, to: pages, by: 64) {
            var table = [UInt8](repeating: 0, count: 4096)
            var body: [UInt8] = []
            for page in block..<min(block + 64, pages) {
                let iv = UInt64(page * 7 + 1)
                let entry = (page - block) * 64
                if unwritten.contains(page) {
                    body += [UInt8](repeating: 0, count: 4096)
                    continue
                }
                let ivBytes = littleEndian(iv, 4) + littleEndian(UInt64(page * 4096), 8) + [0, 0, 0, 0]
                let cipher = Array(try AES._CBC.encrypt(
                    data[(page * 4096)..<((page + 1) * 4096)], using: aesKey, iv: AES._CBC.IV(ivBytes: ivBytes), noPadding: true))
                let mac = SHA224.hmac(key: key[32..<64], message: cipher)
                if interrupted.contains(page) {
                    table.replaceSubrange(entry..<(entry + 4), with: littleEndian(iv + 1, 4))
                    table.replaceSubrange((entry + 4)..<(entry + 32), with: [UInt8](repeating: 0x5a, count: 28))
                    table.replaceSubrange((entry + 32)..<(entry + 36), with: littleEndian(iv, 4))
                    table.replaceSubrange((entry + 36)..<(entry + 64), with: mac)
                } else {
                    table.replaceSubrange(entry..<(entry + 4), with: littleEndian(iv, 4))
                    table.replaceSubrange((entry + 4)..<(entry + 32), with: mac)
                }
                body += cipher
            }
            file += table + body
        }
        return file
    }
}
