import Foundation
import Testing
import TestSupport

/// The programs in Examples/ are built with the tests and run here, so that they never rot.
@Suite struct ExamplesTests {
    @Test func theToDoListPrintsEveryChangeAsItsObserverSeesIt() throws {
        let dir = try TemporaryDirectory()
        let r = try StrataToolTests.run("TodoList", [dir.child("todo")])
        #expect(r.status == 0, "\(r.err)")
        let expected = """
            open to-dos: []
            > add three to-dos
              removed at [], inserted at [0, 1, 2], changed at []
            open to-dos: ["buy milk", "write the report", "call the plumber"]
            > finish 'buy milk'
              removed at [0], inserted at [], changed at []
            open to-dos: ["write the report", "call the plumber"]
            > rename the report
              removed at [], inserted at [], changed at [0]
            open to-dos: ["write the annual report", "call the plumber"]
            > delete the plumber
              removed at [1], inserted at [], changed at []
            open to-dos: ["write the annual report"]
            done: 2 to-dos stored, 1 open

            """
        #expect(r.out == expected)
    }

    @Test func theMigrationWalkthroughGoesFromVersion0To3WithProgress() throws {
        let r = try StrataToolTests.run("MigrationWalkthrough", ["3000"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("version 0: 3000 people written"))
        #expect(r.out.contains("migration block called with oldSchemaVersion 0"))
        #expect(r.out.contains("already readable: Ada0 Lovelace, 20 years, email none"))
        #expect(r.out.contains("Person: done (3000 objects)"))
        #expect(r.out.contains("done: 3000 people at version 3, 3000 with a combined fullName, ages 20...79"))
    }
}
