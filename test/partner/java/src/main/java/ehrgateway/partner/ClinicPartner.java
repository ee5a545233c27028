package ehrgateway.partner;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import ehrgateway.client.ApiClient;
import ehrgateway.client.ApiException;
import ehrgateway.client.api.DocumentsApi;
import ehrgateway.client.api.OperationsApi;
import ehrgateway.client.api.RegistryApi;
import ehrgateway.client.model.CallbackState;
import ehrgateway.client.model.DemandContentAcknowledgement;
import ehrgateway.client.model.DemandContentRequest;
import ehrgateway.client.model.DocumentFile;
import ehrgateway.client.model.ErrorResponse;
import ehrgateway.client.model.GetRegistryItemRequest;
import ehrgateway.client.model.MessageState;
import ehrgateway.client.model.RegisterDocumentAcknowledgement;
import ehrgateway.client.model.RegisterDocumentRequest;
import ehrgateway.client.model.RegistryItem;
import ehrgateway.client.model.RegistryRecord;
import ehrgateway.client.model.SearchRegistryItemRequest;
import ehrgateway.client.model.SendDemandContentResponse;
import ehrgateway.client.model.SendDocumentFileResultResponse;
import ehrgateway.client.model.SendRegisterDocumentResponse;
import ehrgateway.client.model.SendRegisterDocumentResultResponse;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.Validation;
import jakarta.validation.Validator;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * A clinic's МИС in Java against a live interface B, through the client openapi-generator makes
 * from specs/openapi.yaml (library native): every operation, one error body, the four callbacks
 * received and their signatures verified. Prints one line per check; exits 1 at the first that
 * fails. The environment names the service, the clinic account and the document to register:
 * EHR_GATEWAY_URL, CLINIC_BUSINESS_ID, CLINIC_USER, CLINIC_TOKEN, CALLBACK_URL (registered for the
 * account; its port is where the receiver listens), CALLBACK_TOKEN, CLINIC_SIGNING_SECRET,
 * DOCUMENT_BASE64, SIGNATURE_BASE64.
 */
public final class ClinicPartner {
  private static final String ORGANIZATION = "1.2.643.5.1.13.13.12.2.77.7973";
  private static final String PATIENT_SNILS = "11223344595";
  private static final Duration CALLBACK_WAIT = Duration.ofSeconds(30);

  private final ApiClient client;
  private final DocumentsApi documents;
  private final RegistryApi registry;
  private final OperationsApi operations;
  private final CallbackReceiver receiver;
  private final String callbackUrl;
  private int passed;

  private ClinicPartner(ApiClient client, CallbackReceiver receiver, String callbackUrl) {
    this.client = client;
    this.documents = new DocumentsApi(client);
    this.registry = new RegistryApi(client);
    this.operations = new OperationsApi(client);
    this.receiver = receiver;
    this.callbackUrl = callbackUrl;
  }

  public static void main(String[] args) throws Exception {
    // The three headers of the security schemes: the native library has no auth support, so every request gets them here.
    String businessId = env("CLINIC_BUSINESS_ID");
    String user = env("CLINIC_USER");
    String token = env("CLINIC_TOKEN");
    ApiClient client = new ApiClient();
    client.updateBaseUri(env("EHR_GATEWAY_URL"));
    client.setRequestInterceptor(request -> request.header("businessId", businessId).header("user", user).header("token", token));

    String callbackUrl = env("CALLBACK_URL");
    int port = java.net.URI.create(callbackUrl).getPort();
    try (CallbackReceiver receiver = new CallbackReceiver(port, env("CLINIC_SIGNING_SECRET"), env("CALLBACK_TOKEN"), client.getObjectMapper())) {
      ClinicPartner partner = new ClinicPartner(client, receiver, callbackUrl);
      partner.run(Base64.getDecoder().decode(env("DOCUMENT_BASE64")), Base64.getDecoder().decode(env("SIGNATURE_BASE64")));
      System.out.println("java partner: " + partner.passed + " checks passed");
    } catch (AssertionError | ApiException failure) {
      System.out.println("FAILED: " + failure.getMessage());
      if (failure instanceof ApiException api) System.out.println("  HTTP " + api.getCode() + " " + api.getResponseBody());
      System.exit(1);
    }
  }

  private void run(byte[] xml, byte[] signature) throws Exception {
    check("ok".equals(operations.getHealth().getStatus()), "getHealth: ok");
    check("ready".equals(operations.getReadiness().getStatus()), "getReadiness: ready");

    UUID localUid = UUID.randomUUID();
    RegisterDocumentRequest request = new RegisterDocumentRequest()
        .localUid(localUid)
        .kind("119")
        .organization(ORGANIZATION)
        .patientSnils(PATIENT_SNILS)
        .creationDateTime(OffsetDateTime.parse("2026-01-15T09:30:00+03:00"))
        .documentNumber("JAVA-0001")
        .document(Base64.getEncoder().encodeToString(xml))
        .signature(Base64.getEncoder().encodeToString(signature))
        .callbackUrl(callbackUrl);
    Validator validator = Validation.buildDefaultValidatorFactory().getValidator();
    checkBeanValidation(validator, request);

    RegisterDocumentAcknowledgement registered = documents.registerDocument(request);
    check(localUid.equals(registered.getLocalUid()) && registered.getQueueMessageId() != null, "registerDocument: acknowledged with its localUid");
    SendRegisterDocumentResponse accepted = receiver.await(SendRegisterDocumentResponse.class, body -> localUid.equals(body.getLocalUid()), CALLBACK_WAIT);
    check("success".equals(accepted.getStatus()), "SendRegisterDocumentResponse: signed, success");
    SendRegisterDocumentResultResponse result = receiver.await(SendRegisterDocumentResultResponse.class, body -> localUid.equals(body.getLocalUid()), CALLBACK_WAIT);
    String emdrId = result.getEmdrId();
    check("success".equals(result.getStatus()) && emdrId != null && result.getRegistrationDateTime() != null, "SendRegisterDocumentResultResponse: signed, registered as " + emdrId);

    SearchRegistryItemRequest search = new SearchRegistryItemRequest().localUid(localUid).patientSnils(PATIENT_SNILS)
        .registerDateBegin(OffsetDateTime.parse("2026-01-01T00:00:00Z")).registerDateEnd(OffsetDateTime.now().plusDays(1));
    check(validator.validate(search).isEmpty(), "Bean Validation: the SearchRegistryItem request is valid");
    List<RegistryItem> items = registry.searchRegistryItem(search).getItems();
    check(items.size() == 1 && emdrId.equals(items.get(0).getEmdrId()) && items.get(0).getVersion() == 1, "searchRegistryItem: finds " + emdrId + ", version 1");
    RegistryRecord record = registry.getRegistryItem(new GetRegistryItemRequest().emdrId(emdrId)).getItem();
    check(emdrId.equals(record.getEmdrId()) && localUid.equals(record.getLocalUid()) && PATIENT_SNILS.equals(record.getPatientSnils()),
        "getRegistryItem: reads " + emdrId + " with its localUid and patient");

    MessageState state = delivered(registered.getQueueMessageId());
    check("completed".equals(state.getState()) && "RegisterDocument".equals(state.getOperation()) && emdrId.equals(state.getEmdrId()), "getMessage: RegisterDocument completed, both callbacks delivered");
    checkOpenForExtension(state);

    UUID clientMessageId = UUID.randomUUID();
    DemandContentRequest demand = new DemandContentRequest().emdrId(emdrId).clientMessageId(clientMessageId).callbackUrl(callbackUrl);
    check(validator.validate(demand).isEmpty(), "Bean Validation: the DemandContent request is valid");
    DemandContentAcknowledgement demanded = documents.demandContent(demand);
    check(clientMessageId.equals(demanded.getClientMessageId()), "demandContent: acknowledged with its clientMessageId");
    SendDemandContentResponse demandAccepted = receiver.await(SendDemandContentResponse.class, body -> clientMessageId.equals(body.getClientMessageId()), CALLBACK_WAIT);
    check("success".equals(demandAccepted.getStatus()) && emdrId.equals(demandAccepted.getEmdrId()), "SendDemandContentResponse: signed, success");
    SendDocumentFileResultResponse file = receiver.await(SendDocumentFileResultResponse.class, body -> clientMessageId.equals(body.getClientMessageId()), CALLBACK_WAIT);
    DocumentFile document = file.getDocument();
    check("success".equals(file.getStatus()) && document != null
        && Arrays.equals(xml, Base64.getDecoder().decode(document.getContent()))
        && Arrays.equals(signature, Base64.getDecoder().decode(document.getSignature())), "SendDocumentFileResultResponse: signed, the document and its signature byte for byte");

    checkErrorBody(request);
    check(receiver.taken() == 4 && receiver.refused().isEmpty(), "callbacks: 4 taken, every token and Standard Webhooks signature verified, none refused");
    check(!receiver.tamperedBodyPasses(), "callbacks: the last one with a byte of its body changed fails the signature check");
  }

  /**
   * Bean Validation over the generated annotations, as a partner with useBeanValidation=true runs it:
   * no HV000030 (callbackUrl is a String with a whole-string @Pattern, the date-times carry none).
   */
  private void checkBeanValidation(Validator validator, RegisterDocumentRequest request) {
    Set<ConstraintViolation<RegisterDocumentRequest>> violations = validator.validate(request);
    check(violations.isEmpty(), "Bean Validation: the RegisterDocument request is valid " + violations);
    List<String> paths = validator.validate(request.callbackUrl(callbackUrl + "?x=1")).stream().map(violation -> violation.getPropertyPath().toString()).toList();
    request.callbackUrl(callbackUrl);
    check(paths.equals(List.of("callbackUrl")), "Bean Validation: a callbackUrl with a query is refused " + paths);
  }

  /** The request's state once both of its callbacks are delivered (the gateway records a delivery after the clinic's answer). */
  private MessageState delivered(UUID queueMessageId) throws Exception {
    long deadline = System.nanoTime() + CALLBACK_WAIT.toNanos();
    for (;;) {
      MessageState state = registry.getMessage(queueMessageId);
      List<String> callbacks = state.getCallbacks().stream().filter(callback -> "delivered".equals(callback.getState())).map(CallbackState::getName).toList();
      if (callbacks.equals(List.of("SendRegisterDocumentResponse", "SendRegisterDocumentResultResponse"))) return state;
      if (System.nanoTime() > deadline) throw new AssertionError("getMessage: callbacks not delivered: " + state.getCallbacks());
      Thread.sleep(100);
    }
  }

  /** An answer of a later version, with a member and a state this client does not know, still reads. */
  private void checkOpenForExtension(MessageState state) throws Exception {
    ObjectMapper mapper = client.getObjectMapper();
    ObjectNode later = mapper.valueToTree(state);
    later.put("state", "archived").putObject("addedLater").put("reason", "a member of a later version");
    MessageState read = mapper.treeToValue(later, MessageState.class);
    check("archived".equals(read.getState()) && read.getAdditionalProperty("addedLater") != null, "MessageState of a later version (new member, new state) reads");
  }

  /** A refused request: the error body reads as the generated ErrorResponse. */
  private void checkErrorBody(RegisterDocumentRequest request) throws Exception {
    String unregistered = "https://unregistered.example.ru/emdr";
    try {
      documents.registerDocument(request.localUid(UUID.randomUUID()).callbackUrl(unregistered));
      throw new AssertionError("registerDocument with an unregistered callbackUrl was accepted");
    } catch (ApiException refused) {
      ErrorResponse error = client.getObjectMapper().readValue(refused.getResponseBody(), ErrorResponse.class);
      check(refused.getCode() == 403 && error.getStatus() == ErrorResponse.StatusEnum.ERROR
          && "FORBIDDEN".equals(error.getErrors().get(0).getCode()) && "/requestBody/callbackUrl".equals(error.getErrors().get(0).getPath()),
          "registerDocument with an unregistered callbackUrl: 403, ErrorResponse FORBIDDEN at /requestBody/callbackUrl");
    }
  }

  private void check(boolean condition, String what) {
    if (!condition) throw new AssertionError(what);
    passed++;
    System.out.println("ok  " + what);
  }

  private static String env(String name) {
    String value = System.getenv(name);
    if (value == null || value.isEmpty()) throw new IllegalStateException("set " + name);
    return value;
  }
}
