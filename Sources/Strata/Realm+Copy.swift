import Engine
import Foundation

extension Realm {
    /// Writes a copy of this Realm, as of its current version, to the file `configuration` names (RealmSwift's
    /// `writeCopy(configuration:)`): every object, the schema and its history, compacted. The destination must
    /// not exist yet; open it afterwards with `configuration`.
    public func writeCopy(configuration: Configuration) throws {
        try core.writeCopy(to: configuration)
    }

    /// Writes a copy of the Realm to `fileURL` (encrypted with `encryptionKey` when given): RealmSwift's older
    /// form of `writeCopy(configuration:)`.
    public func writeCopy(toFile fileURL: URL, encryptionKey: Data? = nil) throws {
        var destination = configuration
        destination.fileURL = fileURL
        destination.inMemoryIdentifier = nil
        destination.encryptionKey = encryptionKey
        destination.readOnly = false
        try core.writeCopy(to: destination)
    }
}

extension RealmCore {
    func writeCopy(to destination: Realm.Configuration) throws {
        if isInWriteTransaction {
            fatalError("Cannot write a copy of a Realm inside a write transaction: commit or cancel it first")
        }
        if destination.identity == configuration.identity {
            throw Realm.Error(.fileExists, "Cannot write a copy of \(shared.displayName) onto itself", fileURL: destination.fileURL)
        }
        if SharedFile.fileExists(for: destination) {
            throw Realm.Error(
                .fileExists, "Cannot write a copy to \(destination.fileURL?.path ?? destination.identity): a Realm exists there already; delete it first",
                fileURL: destination.fileURL)
        }
        let source = readSnapshot
        let schema = shared.storedSchema.withLock { $0 }
        var partitions: [UInt32] = [StoredSchema.metadataPartition]
        for t in schema?.types ?? [] {
            partitions.append(t.partition)
            if let p = t.primaryKeyPartition { partitions.append(p) }
            partitions += (t.indexes ?? []).map(\.partition)
        }
        for entry in schema?.pending ?? [] where !partitions.contains(entry.oldType.partition) {
            partitions.append(entry.oldType.partition)
        }
        var target = destination
        target.readOnly = false
        let copy = try SharedFile.shared(for: target)
        do {
            let tx = try copy.database.beginWrite()
            do {
                for p in partitions {
                    try source.scan(p) { key, value in
                        try tx.put([UInt8](key), [UInt8](value), in: p)
                        return true
                    }
                }
                _ = try tx.commit()
            } catch {
                tx.abort()
                throw error
            }
            copy.storedSchema.withLock { $0 = schema }
        } catch {
            throw realmError(error, fileURL: destination.fileURL)
        }
    }
}
