import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// Grammar corners the LiteCore cases do not cover, checked against the spec 9.1/9.2 shapes.
final class N1QLParserGrammarTests: XCTestCase {
    private func tree(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            return try N1QLParserFixtureTests.liteCoreForm(N1QLParser.parse(text))
        } catch {
            XCTFail("\(text): \(error)", file: file, line: line)
            return ""
        }
    }

    func testJoinsAndSources() {
        XCTAssertEqual(tree("SELECT a.x FROM s.c AS a LEFT OUTER JOIN c b ON a.k = b.k"),
                       "{'FROM':[{'AS':'a','COLLECTION':'c','SCOPE':'s'},{'AS':'b','COLLECTION':'c','JOIN':'LEFT OUTER',"
                       + "'ON':['=',['.a.k'],['.b.k']]}],'WHAT':[['.a.x']]}")
        XCTAssertEqual(tree("SELECT x FROM c INNER JOIN d ON c.k = d.k;"),
                       "{'FROM':[{'COLLECTION':'c'},{'COLLECTION':'d','JOIN':'INNER','ON':['=',['.c.k'],['.d.k']]}],'WHAT':[['.x']]}")
        XCTAssertEqual(tree("SELECT l FROM _ UNNEST list AS l"),
                       "{'FROM':[{'COLLECTION':'_'},{'AS':'l','UNNEST':['.list']}],'WHAT':[['.l']]}")
    }

    func testStarTakesAnAlias() {
        // LiteCore's grammar: `*` is a property expression, so `[AS] alias` may follow it.
        XCTAssertEqual(tree("SELECT meta().id AS id, * AS data FROM users"),
                       "{'FROM':[{'COLLECTION':'users'}],'WHAT':[['AS',['_.',['meta()'],'.id'],'id'],['AS',['.'],'data']]}")
        XCTAssertEqual(tree("SELECT * FROM users"), "{'FROM':[{'COLLECTION':'users'}],'WHAT':[['.']]}")
    }

    func testIsNullMissingAndValued() {
        XCTAssertEqual(tree("SELECT x IS NULL, x IS NOT NULL, x IS MISSING, x NOT MISSING"),
                       "{'WHAT':[['IS',['.x'],null],['IS NOT',['.x'],null],['IS',['.x'],['MISSING']],['IS NOT',['.x'],['MISSING']]]}")
    }

    func testNestedQuantifiersScopeTheirVariables() {
        XCTAssertEqual(tree("SELECT ANY a IN xs SATISFIES EVERY b IN a.ys SATISFIES b = a.z END END, a"),
                       "{'WHAT':[['ANY','a',['.xs'],['EVERY','b',['?a.ys'],['=',['?b'],['?a.z']]]],['.a']]}")
    }

    func testPrecedenceLevels() {
        XCTAssertEqual(tree("SELECT a OR b AND c = d + e * f || g"),
                       "{'WHAT':[['OR',['.a'],['AND',['.b'],['=',['.c'],['+',['.d'],['*',['.e'],['||',['.f'],['.g']]]]]]]]}")
        XCTAssertEqual(tree("SELECT 1 < 2 = 3 > 4"), "{'WHAT':[['=',['<',1,2],['>',3,4]]]}")
        XCTAssertEqual(tree("SELECT -(1), - x.y, 2 - -3"), "{'WHAT':[['-',1],['-',['.x.y']],['-',2,-3]]}")
    }

    /// Integers beyond Int64 become doubles (JSONCore writes those in %.16g form).
    func testNumbers() {
        XCTAssertEqual(tree("SELECT 9223372036854775808, -9223372036854775809, 1.0, 1e3"),
                       "{'WHAT':[9.223372036854776e+18,-9.223372036854776e+18,1.0,1000.0]}")
    }

    func testCollateWrapsThePrecedingExpression() {
        XCTAssertEqual(tree("SELECT x ORDER BY name COLLATE UNICODE DESC"),
                       "{'ORDER_BY':[['DESC',['COLLATE',{'UNICODE':true},['.name']]]],'WHAT':[['.x']]}")
    }

    func testPostfixPathsOnAnyPrimary() {
        XCTAssertEqual(tree("SELECT lower(x).y, [1,2][0], $p.q, (a).b"),
                       "{'WHAT':[['_.',['lower()',['.x']],'.y'],['_.',['[]',1,2],'[0]'],['_.',['$p'],'.q'],['_.',['.a'],'.b']]}")
        XCTAssertEqual(tree("SELECT a.from, `a\\b`"), "{'WHAT':[['.a.from'],['.a\\\\\\\\b']]}")
    }

    func testParseExpression() throws {
        XCTAssertEqual(try N1QLParserFixtureTests.liteCoreForm(N1QLParser.parseExpression("lower(name) || 'x'")),
                       "['||',['lower()',['.name']],'x']")
        XCTAssertThrowsError(try N1QLParser.parseExpression("name name"))
    }
}
