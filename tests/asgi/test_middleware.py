import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock


@pytest.mark.parametrize("body", [None, {"code": "x"}])
def test_the_journal_records_a_fault_answer_before_the_client_sees_it(body: object) -> None:
    mock = OpenSandboxMock()
    mock.faults.add(method="GET", path="/health", status=503, times=None, body=body)
    with mock.server() as server, httpx.Client(base_url=server.url) as client:
        for sent in range(1, 201):
            assert client.get("/health").status_code == 503
            assert len(mock.journal.entries()) == sent, f"request {sent} was answered before it was journalled"
    assert {e.status for e in mock.journal.entries()} == {503}
    assert {e.fault for e in mock.journal.entries()} == {"respond:503"}


def test_head_and_no_content_answers_are_journalled_at_once() -> None:
    mock = OpenSandboxMock()
    mock.faults.add(method="*", path="/version", status=204, times=None)
    with mock.server() as server, httpx.Client(base_url=server.url) as client:
        for sent in range(1, 51):
            client.get("/version")
            assert len(mock.journal.entries()) == sent
