package workflows

// AnswerFrom exposes answerFrom to the tests of package workflows_test.
var AnswerFrom = answerFrom
