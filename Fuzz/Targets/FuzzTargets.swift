import Engine
import RealmFile
import RealmFileTesting
import Strata

/// Every fuzz target: a plain function over bytes that never traps. A returned string describes a wrong
/// result; libFuzzer's entry turns it into a crash, `FuzzReplayTests` into a test failure.
public enum FuzzTargets {
    public static let all: [String: @Sendable ([UInt8]) -> String?] = [
        "walDecode": EngineFuzzing.logFile,
        "recovery": EngineFuzzing.recovery,
        "segmentDecode": EngineFuzzing.segment,
        "encryptedDamage": EngineFuzzing.encryptedDamage,
        "manifestDecode": EngineFuzzing.manifest,
        "lz4Block": EngineFuzzing.lz4Block,
        "operations": EngineFuzzing.operations,
        "recordDecode": StrataFuzzing.record,
        "schemaDecode": StrataFuzzing.storedSchema,
        "queryParse": StrataFuzzing.query,
        "schemaChanges": SchemaChangeFuzzing.run,
        "realmFileDecode": RealmFileFuzzing.decode,
        "realmFileDecrypt": RealmFileFuzzing.decrypt,
        "syncWire": SyncWireFuzzing.run,
    ]

    /// Valid inputs of every kind, written by the code, for the corpus.
    public static func seeds() throws -> [String: [[UInt8]]] {
        var out = try EngineFuzzing.seedFiles()
        for (k, v) in StrataFuzzing.seedFiles() { out[k, default: []] += v }
        out["schemaChanges", default: []] += SchemaChangeFuzzing.seeds
        out["realmFileDecode", default: []] += RealmFileFuzzing.seedFiles()
        out["realmFileDecrypt", default: []] += try RealmFileFuzzing.encryptedSeedFiles()
        out["syncWire", default: []] += SyncWireFuzzing.seeds
        return out
    }
}
