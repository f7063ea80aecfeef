import Foundation
import Engine

/// The files in `../shared` beside the repository (Realm's own test files, seeds), which tests read in place and
/// never copy into the project. `STRATA_SHARED` names another location.
public enum SharedFixtures {
    public static let root: URL = {
        if let path = SystemProcess.environment("STRATA_SHARED") { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
    }()

    /// `../shared/realm-fixtures`: files written by realm-core and RealmSwift.
    public static let realmFixtures = root.appendingPathComponent("realm-fixtures")

    /// Whether the Realm fixtures are present (tests that need them are skipped, with a message, when not).
    public static var realmFixturesPresent: Bool {
        FileManager.default.fileExists(atPath: realmFixtures.appendingPathComponent("README.md").path)
    }

    /// The path of a fixture, such as `format-24/all-types.realm`.
    public static func realmFixture(_ relativePath: String) -> String {
        realmFixtures.appendingPathComponent(relativePath).path
    }
}
