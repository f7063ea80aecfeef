// Opening the sealed blocks and index of an encrypted segment (`Cipher`); the plain paths read in place.

extension SegmentReader {
    /// Runs `body`, which opens sealed bytes at `offset`, giving a failure this segment's name and the offset.
    func opening<R>(offset: Int, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch var error as StorageError {
            error.file = name
            error.offset = offset
            throw error
        }
    }

    /// The plaintext of an encrypted block's stored bytes (LZ4 still, when the block is compressed), its header
    /// authenticated with it. Remembers that block `i` authenticated (`checkAllBlocks`).
    func open(_ i: Int, _ b: BlockLocation, _ stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let cipher else { throw StorageError.corrupted("an encrypted block in a plain segment", file: name, offset: b.start) }
        let flags = (b.compressed ? BlockHeader.flagLZ4 : 0) | BlockHeader.flagEncrypted
        let header = BlockHeader.authenticated(rawCount: UInt32(b.rawCount), entryCount: UInt32(b.entryCount), flags: flags, salt: salt)
        let plain = try opening(offset: b.start) {
            try cipher.open(stored, at: .block(file: fileNumber, offset: b.start), database: identity, authenticating: header)
        }
        let index = try index()
        let word = i >> 6, bit = UInt64(1) << UInt64(i & 63)
        if index.authenticated.withLock({ $0[word] & bit }) == 0 { index.authenticated.withLock { $0[word] |= bit } }
        return plain
    }

    /// Checks, once per block, that an encrypted block authenticates (opening it and dropping the plaintext);
    /// `checkAllBlocks` calls it so that a forged block whose checksum matches is found before reads that
    /// cannot throw.
    func authenticate(_ i: Int) throws {
        guard cipher != nil else { return }
        let index = try index()
        let word = i >> 6, bit = UInt64(1) << UInt64(i & 63)
        if index.authenticated.withLock({ $0[word] & bit }) != 0 { return }
        let b = try locate(i)
        _ = try open(i, b, UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored]))
    }
}
