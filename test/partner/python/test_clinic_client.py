"""A clinic's Python integration with interface B, through the client generated from specs/openapi.yaml.

Reads the service and the clinic account from the environment:
EHR_GATEWAY_URL, CLINIC_BUSINESS_ID, CLINIC_USER, CLINIC_TOKEN, and the document to register as
DOCUMENT_BASE64 and SIGNATURE_BASE64 (a detached CMS signature over it).
"""

import datetime
import os
import time
import uuid

import pytest

from ehr_gateway_client import Client
from ehr_gateway_client.api.documents import demand_content, register_document
from ehr_gateway_client.api.registry import get_message, get_registry_item, search_registry_item
from ehr_gateway_client.models import (
    DemandContentAcknowledgement,
    DemandContentRequest,
    ErrorResponse,
    GetRegistryItemRequest,
    GetRegistryItemResponse,
    MessageState,
    RegisterDocumentAcknowledgement,
    RegisterDocumentRequest,
    SearchRegistryItemRequest,
    SearchRegistryItemResponse,
)

ORGANIZATION = "1.2.643.5.1.13.13.12.2.77.7973"
VALID_SNILS = "11223344595"


@pytest.fixture(scope="module")
def client() -> Client:
    headers = {
        "businessId": os.environ["CLINIC_BUSINESS_ID"],
        "user": os.environ["CLINIC_USER"],
        "token": os.environ["CLINIC_TOKEN"],
    }
    with Client(base_url=os.environ["EHR_GATEWAY_URL"], headers=headers, raise_on_unexpected_status=True) as opened:
        yield opened


@pytest.fixture(scope="module")
def registered(client: Client) -> tuple[uuid.UUID, RegisterDocumentAcknowledgement]:
    local_uid = uuid.uuid4()
    request = RegisterDocumentRequest(
        local_uid=local_uid,
        kind="119",
        organization=ORGANIZATION,
        patient_snils=VALID_SNILS,
        creation_date_time=datetime.datetime(2026, 1, 15, 9, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=3))),
        document=os.environ["DOCUMENT_BASE64"],
        signature=os.environ["SIGNATURE_BASE64"],
        document_number="PY-0001",
    )
    response = register_document.sync_detailed(client=client, body=request)
    assert response.status_code == 200, response.content
    assert isinstance(response.parsed, RegisterDocumentAcknowledgement)
    return local_uid, response.parsed


def wait_for_emdr_id(client: Client, local_uid: uuid.UUID) -> str:
    """Registration completes asynchronously: poll the registry until the document is there."""
    for _ in range(150):
        found = search_registry_item.sync(client=client, body=SearchRegistryItemRequest(local_uid=local_uid))
        assert isinstance(found, SearchRegistryItemResponse)
        if found.items:
            return found.items[0].emdr_id
        time.sleep(0.1)
    raise AssertionError(f"document {local_uid} not registered")


def test_register_document_is_acknowledged_with_its_local_uid(registered):
    local_uid, acknowledgement = registered
    assert acknowledgement.local_uid == local_uid
    assert isinstance(acknowledgement.queue_message_id, uuid.UUID)


def test_search_registry_item_finds_the_registered_document(client, registered):
    local_uid, _ = registered
    emdr_id = wait_for_emdr_id(client, local_uid)
    found = search_registry_item.sync(client=client, body=SearchRegistryItemRequest(patient_snils=VALID_SNILS, kind="119", local_uid=local_uid))
    assert isinstance(found, SearchRegistryItemResponse)
    assert [(item.emdr_id, item.local_uid, item.organization, item.version) for item in found.items] == [(emdr_id, local_uid, ORGANIZATION, 1)]
    assert found.items[0].registration_date_time.tzinfo is not None


def test_get_registry_item_reads_the_record_with_its_patient(client, registered):
    local_uid, _ = registered
    emdr_id = wait_for_emdr_id(client, local_uid)
    found = get_registry_item.sync(client=client, body=GetRegistryItemRequest(emdr_id=emdr_id))
    assert isinstance(found, GetRegistryItemResponse)
    assert (found.item.emdr_id, found.item.local_uid, found.item.organization, found.item.patient_snils) == (emdr_id, local_uid, ORGANIZATION, VALID_SNILS)
    # An emdrId the registry does not have: a typed 404 with the classifier's code.
    unknown = get_registry_item.sync_detailed(client=client, body=GetRegistryItemRequest(emdr_id="26.01.999999999"))
    assert unknown.status_code == 404
    assert isinstance(unknown.parsed, ErrorResponse)
    assert [error.code for error in unknown.parsed.errors] == ["REGISTRY_ITEM_NOT_FOUND"]


def test_get_message_shows_the_completed_registration(client, registered):
    local_uid, acknowledgement = registered
    emdr_id = wait_for_emdr_id(client, local_uid)
    # The registry holds the document a moment before the request's own state says completed
    # (accepted, then submitted while the registry's asynchronous answer is on its way).
    for _ in range(50):
        state = get_message.sync(client=client, queue_message_id=acknowledgement.queue_message_id)
        if isinstance(state, MessageState) and state.state not in ("accepted", "submitted"):
            break
        time.sleep(0.1)
    assert isinstance(state, MessageState)
    assert state.queue_message_id == acknowledgement.queue_message_id
    assert state.local_uid == local_uid
    # An open set of states (x-extensible-enum): a plain string, so a state added later still reads.
    assert state.state == "completed"
    assert state.emdr_id == emdr_id


def test_demand_content_echoes_the_client_message_id(client, registered):
    local_uid, _ = registered
    emdr_id = wait_for_emdr_id(client, local_uid)
    client_message_id = uuid.uuid4()
    acknowledgement = demand_content.sync(client=client, body=DemandContentRequest(emdr_id=emdr_id, client_message_id=client_message_id))
    assert isinstance(acknowledgement, DemandContentAcknowledgement)
    assert acknowledgement.client_message_id == client_message_id
    assert isinstance(acknowledgement.queue_message_id, uuid.UUID)


def test_an_unknown_request_is_a_typed_404(client):
    response = get_message.sync_detailed(client=client, queue_message_id=uuid.uuid4())
    assert response.status_code == 404
    assert isinstance(response.parsed, ErrorResponse)
    assert [error.code for error in response.parsed.errors] == ["NOT_FOUND"]
