/**
 * Classifier 1.2.643.5.1.13.13.99.2.305 «РЭМД. Классификатор кодов сообщений», version 3.18: every
 * code of it, as data. Interface B's codes (codes.ts), the spec's enums (scripts/spec-codes.ts),
 * the docs' error table and the Russian column read this table; a code the registry reports is
 * relayed as it came, whether or not it is here.
 *
 * Source: the public transcription of an FNSI export in GitHub asaf1n/EGISZ-Proxy-Reports-Airflow,
 * db/01_schema.sql, table dim_nsi_error_code (oid 1.2.643.5.1.13.13.99.2.305, version 3.18): its
 * mnemonics, ids, descriptions (`meaningRu`, as the classifier words them, its misspellings
 * included: RECEPIENT_*, FRLLO_RELISE_*) and contours. That transcription lists 127 rows: the
 * classifier names FRLLO_RELISE_POSITION_ERROR twice (ids 85 and 88, with different descriptions)
 * and it keeps id 85; id 88 is here with the same mnemonic and no Russian description
 * (`meaningRu: null`), since no public material we found gives it. `meaning` is the gateway's
 * English rendering. Not checked against nsi.rosminzdrav.ru itself: a newer version is a change of
 * this file (and its test, test/emdr/classifier.test.ts).
 */

/** Which part of the registry's work a code belongs to (the transcription's `contour`). */
export type ClassifierContour = 'registration' | 'frllo' | 'online-orders';

export interface ClassifierEntry {
  id: number;
  mnemonic: string;
  contour: ClassifierContour;
  meaning: string;
  meaningRu: string | null;
}

export const CLASSIFIER_305_OID = '1.2.643.5.1.13.13.99.2.305';
export const CLASSIFIER_305_VERSION = '3.18';

export const CLASSIFIER_305 = [
  { id: 1, mnemonic: 'ACCESS_DENIED', contour: 'registration', meaning: 'The requesting system has no permission to get the document', meaningRu: 'У запрашивающей РМИС/МИС нет разрешения на получение документа' },
  { id: 2, mnemonic: 'ATTRIBUTE_MISMATCH', contour: 'registration', meaning: 'The providing system sent a document whose metadata differ from the registered ones', meaningRu: 'Из предоставляющей РМИС/МИС передан документ, метаописание которого не соответствует зарегистрированному' },
  { id: 3, mnemonic: 'CAN_NOT_ASSOCIATE', contour: 'registration', meaning: 'The documents cannot be associated: the association is not allowed', meaningRu: 'Невозможно связать документы. Создание недопустимой связи документов' },
  { id: 4, mnemonic: 'CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT', contour: 'registration', meaning: 'No certificate chain to an accredited certification authority (the employee\'s certificate was issued by a non-accredited CA, or a certificate of the chain is not valid)', meaningRu: 'Не удалось построить цепочку сертификатов до аккредитованного удостоверяющего центра (сертификат сотрудника выдан не аккредитованным УЦ или один из сертификатов цепочки не действителен)' },
  { id: 5, mnemonic: 'CANT_REG_VERSION', contour: 'registration', meaning: 'The document version cannot be registered', meaningRu: 'Регистрация версии документа невозможна' },
  { id: 6, mnemonic: 'DIGEST_MISMATCH', contour: 'registration', meaning: 'The digest of the document received from the providing system does not match the one registered', meaningRu: 'Хеш-сумма документа, полученного из предоставляющей системы, не соответсвует зарегистрированной в РЭМД' },
  { id: 7, mnemonic: 'DISABLED_RMIS', contour: 'registration', meaning: 'The system is registered with the registry but not active', meaningRu: 'РМИС/МИС зарегистрирована в РЭМД но не активна' },
  { id: 8, mnemonic: 'DOC_DATE_MISMATCH_CERT_NOT_AFTER', contour: 'registration', meaning: 'The signature\'s certificate is not valid at the document\'s creation date (the document was created after the certificate expired)', meaningRu: 'Сертификат ЭП недействителен на дату создания документа (документ создан позже окончания срока действия сертификата)' },
  { id: 9, mnemonic: 'DOC_DATE_MISMATCH_CERT_NOT_BEFORE', contour: 'registration', meaning: 'The signature\'s certificate is not valid at the document\'s creation date (the document was created before the certificate\'s validity began)', meaningRu: 'Сертификат ЭП недействителен на дату создания документа (документ создан раньше начала срока действия сертификата)' },
  { id: 10, mnemonic: 'INCONSISTENT_DIGESTS', contour: 'registration', meaning: 'Signatures with the same digest algorithm carry different document digests: signatures of different documents', meaningRu: 'ЭП при одинаковых алгоритмах хеширования содержат разные хеш-суммы документов. ЭП от разных документов' },
  { id: 11, mnemonic: 'INTERNAL_ERROR', contour: 'registration', meaning: 'Internal error', meaningRu: 'Внутренняя ошибка' },
  { id: 12, mnemonic: 'INVALID_CERT_KEY_USAGE', contour: 'registration', meaning: 'The key usage of the signature\'s key does not meet the requirements', meaningRu: 'Область использования ключа ЭП не соответствует предъявляемым требованиям' },
  { id: 13, mnemonic: 'INVALID_CONTENT', contour: 'registration', meaning: 'The providing system sent a document whose file format does not meet the requirements of the document kind', meaningRu: 'Из предоставляющей РМИС/МИС передан документ, формат файла которого не соответствует требованиям вида документов' },
  { id: 14, mnemonic: 'INVALID_PLUGGABLE_ATTRS', contour: 'registration', meaning: 'The document\'s additional attributes do not match the kind\'s schema of additional attributes', meaningRu: 'Дополнительные атрибуты документа не соответствуют схеме дополнительных атрибутов вида документов' },
  { id: 15, mnemonic: 'MIS_ERROR', contour: 'registration', meaning: 'Error of the service of the providing system', meaningRu: 'Ошибка сервиса системы, предоставляющей документ' },
  { id: 16, mnemonic: 'MIS_NOT_AVAILABLE', contour: 'registration', meaning: 'The service of the providing system is not available', meaningRu: 'Сервис системы, предоставляющей документ, не доступен' },
  { id: 17, mnemonic: 'NO_DOCUMENT_KIND_ON_DATE', contour: 'registration', meaning: 'The document\'s creation date lies outside the period allowed for the document kind', meaningRu: 'Дата создания документа находится вне периода, допустимого для вида документов' },
  { id: 18, mnemonic: 'NO_END_ENTITY_CERTIFICATE', contour: 'registration', meaning: 'The signature holds no certificate to verify it with', meaningRu: 'В ЭП отсутствует сертификат проверки подписи' },
  { id: 19, mnemonic: 'NO_RMIS', contour: 'registration', meaning: 'The system is not registered with the registry', meaningRu: 'РМИС/МИС не зарегистрирована в РЭМД' },
  { id: 20, mnemonic: 'NO_ROLE_POLICY_ON_DATE', contour: 'registration', meaning: 'At that date the role may not sign documents of that kind', meaningRu: 'В указанную дату для роли недоступно подписание документов указанного вида' },
  { id: 21, mnemonic: 'NO_SIGNATURE', contour: 'registration', meaning: 'The document has no signatures', meaningRu: 'Отсутствуют подписи документа' },
  { id: 22, mnemonic: 'NO_SNILS', contour: 'registration', meaning: 'Whether the patient\'s SNILS is given does not meet the requirements of the document kind', meaningRu: 'Наличие СНИЛС пациента не соответствует требованиям вида документов' },
  { id: 23, mnemonic: 'NO_SPECIALITY', contour: 'registration', meaning: 'Whether the signer\'s speciality is given does not meet the requirements of the document kind', meaningRu: 'Наличие специальности подписанта не соответствует требованиям вида документов' },
  { id: 24, mnemonic: 'NOT_UNIQUE_ASSOCIATION', contour: 'registration', meaning: 'The document association being registered exists already', meaningRu: 'Регистрируемая связь документов уже существует' },
  { id: 25, mnemonic: 'NOT_UNIQUE_PROVIDED_ID', contour: 'registration', meaning: 'A document with this id (in the system) is already registered', meaningRu: 'Документ с указанным идентификатором (в РМИС/МИС) уже зарегистрирован' },
  { id: 26, mnemonic: 'OBJECT_NOT_FOUND', contour: 'registration', meaning: 'Dictionary entry not found', meaningRu: 'Не найдена запись справочника' },
  { id: 27, mnemonic: 'ORG_NOT_FOUND_IN_FRMO', contour: 'registration', meaning: 'The organization is not found in the ФРМО', meaningRu: 'Организация не найдена в ФРМО' },
  { id: 28, mnemonic: 'ORG_SIGNATURE_OCCURRENCE_MISMATCH', contour: 'registration', meaning: 'Whether the organization\'s signature is given does not meet the requirements of the document kind', meaningRu: 'Наличие подписи организации не соответствует требованиям вида документов' },
  { id: 29, mnemonic: 'PATIENT_CREATION_ERROR', contour: 'registration', meaning: 'Error creating the patient in the patient index (ГИП)', meaningRu: 'Ошибка при создании пациента в ГИП' },
  { id: 30, mnemonic: 'PATIENT_MPI_MISMATCH', contour: 'registration', meaning: 'The patient data given with this local id differ from those registered in the patient index (ГИП)', meaningRu: 'Данные пациента с переданным локальным идентификатором отличаются от зарегистрированных в ГИП' },
  { id: 31, mnemonic: 'PATIENT_OCCURRENCE_MISMATCH', contour: 'registration', meaning: 'Whether patient data are given does not meet the requirements of the document kind', meaningRu: 'Наличие сведений о пациенте не соответствует требованиям вида документов' },
  { id: 32, mnemonic: 'PERSON_CARD_NOT_FOUND', contour: 'registration', meaning: 'The employee\'s personal file is missing from the ФРМР', meaningRu: 'Личное дело сотрудника отсутствует в ФРМР' },
  { id: 33, mnemonic: 'PERSON_NOT_FOUND', contour: 'registration', meaning: 'The employee is not found in the ФРМР', meaningRu: 'Сотрудник не найден в ФРМР' },
  { id: 34, mnemonic: 'PERSON_POST_IN_FRMR_MISMATCH', contour: 'registration', meaning: 'The employee\'s position given differs from the one registered in the ФРМР', meaningRu: 'Переданная должность сотрудника не соответствует должности, зарегистрированной в ФРМР' },
  { id: 35, mnemonic: 'PLUGGABLE_ATTRS_OCCURRENCE_MISMATCH', contour: 'registration', meaning: 'Whether additional attributes are given does not meet the requirements of the document kind', meaningRu: 'Наличие дополнительных атрибутов документа не соответстветсвует требованиям вида документов' },
  { id: 36, mnemonic: 'POSITION_TO_ROLE_MISMATCH', contour: 'registration', meaning: 'The signer\'s position does not match the signer\'s role', meaningRu: 'Несоотствие должности и роли подписанта' },
  { id: 37, mnemonic: 'REGISTRY_ITEM_NOT_FOUND', contour: 'registration', meaning: 'The requested registry item is not found', meaningRu: 'Запрашиваемая запись регистра не найдена' },
  { id: 38, mnemonic: 'RMIS_REGION_MISMATCH', contour: 'registration', meaning: 'The organization\'s region differs from the system\'s region', meaningRu: 'Регион организации не соответствует региону РМИС/МИС' },
  { id: 39, mnemonic: 'ROLE_OCCURRENCE_MISMATCH', contour: 'registration', meaning: 'The number of employee signatures with the required role does not meet the requirements of the document kind', meaningRu: 'Число ЭП сотрудников с требуемой ролью не соответствует требованиям вида документов' },
  { id: 40, mnemonic: 'RUNTIME_ERROR', contour: 'registration', meaning: 'Unexpected error', meaningRu: 'Непредвиденная ошибка' },
  { id: 41, mnemonic: 'SIGNATURE_DECODING_ERROR', contour: 'registration', meaning: 'The signature could not be decoded', meaningRu: 'Ошибка декодирования ЭП' },
  { id: 42, mnemonic: 'SIGNATURE_VERIFICATION_ERROR', contour: 'registration', meaning: 'The signature is not valid', meaningRu: 'Подпись не верна' },
  { id: 43, mnemonic: 'SIGNER_ORG_MISMATCH', contour: 'registration', meaning: 'The signer\'s organization differs from the organization registering the document (and the system has no permission for that)', meaningRu: 'Организация подписанта отлична от организации, регистрирующей документ (и РМИС/МИС не имеет на это разрешения)' },
  { id: 44, mnemonic: 'UNKNOWN_ALGORITHM', contour: 'registration', meaning: 'Unsupported signature algorithm', meaningRu: 'Неподдерживаемый алгоритм подписи' },
  { id: 45, mnemonic: 'VALUE_MISMATCH_METADATA_AND_CERTIFICATE', contour: 'registration', meaning: 'The data (of the employee or the organization) in the message differ from those in the signature\'s certificate', meaningRu: 'Несоответствие данных (сотрудника либо МО) в сообщении и в сертификате ЭП' },
  { id: 46, mnemonic: 'VALUE_MISMATCH_METADATA_AND_FRMR', contour: 'registration', meaning: 'The employee data given do not match those registered in the ФРМР', meaningRu: 'Переданные данные сотрудника не соответствуют данным, зарегистрированным в ФРМР' },
  { id: 47, mnemonic: 'WRONG_CREATION_DATE', contour: 'registration', meaning: 'The document\'s creation date is later than its registration date', meaningRu: 'Дата создания документа больше даты регистрации' },
  { id: 48, mnemonic: 'WRONG_MESSAGE_ID', contour: 'registration', meaning: 'No asynchronous request for the document file with this messageID', meaningRu: 'Асинхронный запрос файла ЭМД с указанным messageID не найден' },
  { id: 49, mnemonic: 'VALIDATION_ERROR', contour: 'registration', meaning: 'A value failed validation', meaningRu: 'Ошибка валидации значения' },
  { id: 50, mnemonic: 'NO_ORG_ON_DATE', contour: 'registration', meaning: 'The organization is not valid at the document\'s creation date', meaningRu: 'МО недействительна на дату создания документа' },
  { id: 51, mnemonic: 'SIGNATURE_DUPLICATION', contour: 'registration', meaning: 'Duplicated signature', meaningRu: 'Дублирование подписи' },
  { id: 52, mnemonic: 'MULTIPLE_SIGNERS', contour: 'registration', meaning: 'The signature container names more than one signer', meaningRu: 'В контейнере ЭП указано более одного подписанта' },
  { id: 53, mnemonic: 'WRONG_SIGNATURE_FORMAT', contour: 'registration', meaning: 'Unsupported signature format', meaningRu: 'Неподдерживаемый формат ЭП' },
  { id: 54, mnemonic: 'NO_DEPARTMENT', contour: 'registration', meaning: 'The organization\'s department is missing', meaningRu: 'Отсутствует информация о подразделении организации' },
  { id: 55, mnemonic: 'INVALID_DOC_CONTENT_TYPE', contour: 'registration', meaning: 'The document is not in a format allowed for the document kind', meaningRu: 'Документ не соответствует допустимому формату (для вида документов)' },
  { id: 56, mnemonic: 'FILE_WAS_NOT_SENT', contour: 'registration', meaning: 'The system did not send the document file', meaningRu: 'ИС не передала файл ЭМД' },
  { id: 57, mnemonic: 'SERIES_REQUIRED_WRONG_SERVICE_VERSION', contour: 'registration', meaning: 'A document whose series is mandatory cannot be registered through version 3.0 of the service', meaningRu: 'Невозможно зарегистрировать ЭМД с обязательным указанием серии документа с помощью версии сервиса 3.0' },
  { id: 58, mnemonic: 'SERIES_REQUIRED', contour: 'registration', meaning: 'The document\'s series must be given', meaningRu: 'Необходимо указать серию документа' },
  { id: 59, mnemonic: 'RMIS_ERROR', contour: 'registration', meaning: 'Error in the getDocumentFileResponse of the providing system\'s service', meaningRu: 'Ошибка ответа от сервиса системы в getDocumentFileResponse, предоставляющей документ' },
  { id: 60, mnemonic: 'PATIENT_ALREADY_REGISTERED', contour: 'registration', meaning: 'Internal error of the patient index (ГИП) while creating the patient', meaningRu: 'Внутренняя ошибка ГИП при создании пациента' },
  { id: 61, mnemonic: 'GET_DOCUMENT_FILE_ERROR', contour: 'registration', meaning: 'Error getting the document file from the providing system', meaningRu: 'Ошибка при получении файла документа из предоставляющей системы' },
  { id: 62, mnemonic: 'CA_INACCESSIBILITY', contour: 'registration', meaning: 'The OCSP service\'s address is missing or unreachable, and the CRL is unreachable', meaningRu: 'Адрес OCSP-службы не указан или недоступен и недоступнен CRL' },
  { id: 63, mnemonic: 'PATIENT_NOT_FOUND', contour: 'online-orders', meaning: 'The organization receiving an online certificate order cannot identify the patient: no data found for the personal data received', meaningRu: 'МО-получатель заказа на оформление документа онлайн не может идентифицировать пациента. По полученным персональным данным пациента в МО данные не найдены' },
  { id: 64, mnemonic: 'ADDITIONAL_INFO_REQUIRED', contour: 'online-orders', meaning: 'Not enough information to issue the document ordered online: the citizen must visit in person for further examinations', meaningRu: 'Для формирования запрошенного в рамках услуги "заказ справки он-лайн" документа недостаточно сведений, гражданину необходимо обратиться с личным визитом для прохождения дополнительных исследований' },
  { id: 65, mnemonic: 'NOT_UNIQUE_ITEM', contour: 'online-orders', meaning: 'listDocKindSendRequest (online certificate orders: the list of organizations on ЕПГУ) holds conflicting entries for a document kind with overlapping availability dates', meaningRu: 'В запросе listDocKindSendRequest (сервис "заказ справок онлайн" на предоставление списка МО на ЕПГУ) есть конфликтующие записи по виду документов с пересечением дат доступности документов для заказа гражданами' },
  { id: 66, mnemonic: 'AOGUID_NOT_FOUND', contour: 'registration', meaning: 'The address object id (AOGUID) given in the document is not found in ФИАС', meaningRu: 'Уникальный идентификатор адресного объекта [AOGUID], переданного в СЭМД, не найден в ФИАС' },
  { id: 67, mnemonic: 'REGION_CODE_DIFFERENT', contour: 'registration', meaning: 'The region of the address object given in the document differs from the region ФИАС gives for its AOGUID', meaningRu: 'Регион адресного объекта [CODE], переданного в СЭМД, не совпадает с регионом [REGIONCODE], полученным в результате проверки уникального идентификатора адресного объекта в ФИАС [AOGUID]' },
  { id: 68, mnemonic: 'HOUSEGUID_NOT_FOUND', contour: 'registration', meaning: 'The house id (HOUSEGUID) given in the document is not found in ФИАС', meaningRu: 'Уникальный идентификатор дома [HOUSEGUID], переданного в СЭМД, не найден в ФИАС' },
  { id: 69, mnemonic: 'AOGUID_DIFFERENT', contour: 'registration', meaning: 'The address object id (AOGUID) given in the document differs from the one ФИАС gives for its HOUSEGUID', meaningRu: 'Уникальный идентификатор адресного объекта [AOGUID], переданного в СЭМД, не совпадает с адресом [AOGUID], полученным в результате проверки уникального идентификатора дома [HOUSEGUID] в ФИАС' },
  { id: 70, mnemonic: 'RESTRICT_NEW_VERSION', contour: 'registration', meaning: 'A new version may not be registered for this document kind', meaningRu: 'Для вида документа запрещено регистрировать новую версию' },
  { id: 71, mnemonic: 'FRLLO_VALIDATION_ERROR', contour: 'frllo', meaning: 'Wrong format of a value (date format or range, string mask or length)', meaningRu: 'Неверный формат передаваемого значения (формат/диапазон даты, маска/длинна строки)' },
  { id: 72, mnemonic: 'FRLLO_DIC_ERROR', contour: 'frllo', meaning: 'Wrong term code for a dictionary value', meaningRu: 'Неверный код термина для значения, определяемого по справочнику' },
  { id: 73, mnemonic: 'FRLLO_REQUIRED_CITIZEN_ERROR', contour: 'frllo', meaning: 'Mandatory citizen data missing: first name, last name or patronymic, sex, birth date', meaningRu: 'Не переданы обязательные сведения о гражданине Имя или Фамилия или Отчество и пол, дата рождения' },
  { id: 74, mnemonic: 'FRLLO_REQUIRED_IDENTIFY_ERROR', contour: 'frllo', meaning: 'No citizen identifier given', meaningRu: 'Не передано ни одного идентификатора гражданина' },
  { id: 75, mnemonic: 'FRLLO_CITIZEN_IDENTIFY_ERROR', contour: 'frllo', meaning: 'Wrong identifiers of the citizen\'s documents', meaningRu: 'Переданы некорректные идентификаторы документов гражданина' },
  { id: 76, mnemonic: 'FRLLO_CITIZEN_SEARCH_ERROR', contour: 'frllo', meaning: 'The citizen is not found in the register', meaningRu: 'Сведения о гражданине в регистре не найдены' },
  { id: 77, mnemonic: 'FRLLO_RECIPE_POSITION_ERROR', contour: 'frllo', meaning: 'The code of the prescribed medical product is missing or ambiguous', meaningRu: 'Не передан код назначенной мед. продукции или передана неоднозначная информация о коде назначенной мед. Продукции' },
  { id: 78, mnemonic: 'FRLLO_BENEFIT_SOURCE_ERROR', contour: 'frllo', meaning: 'The system does not own the prescription data for this benefit category', meaningRu: 'Информационная система не является владельцем сведений о назначении для категории льготы' },
  { id: 79, mnemonic: 'FRLLO_ORGANIZATION_ERROR', contour: 'frllo', meaning: 'The organization that prescribed the medical product is missing or contradictory', meaningRu: 'Не переданы сведения об организации, назначившей мед. продукцию, или переданы противоречивые сведения об организации' },
  { id: 80, mnemonic: 'FRLLO_CITIZEN_BENEFIT_ERROR', contour: 'frllo', meaning: 'No benefit data of the citizen for the benefit code', meaningRu: 'У гражданина не найдены сведения по коду льготы' },
  { id: 81, mnemonic: 'FRLLO_CITIZEN_REGION_ERROR', contour: 'frllo', meaning: 'The citizen has no benefits in the region named in the document', meaningRu: 'У гражданина отсутствуют льготы, в субъекте РФ, указанном в СЭМД' },
  { id: 82, mnemonic: 'FRLLO_COMISSION_INFO_ERROR', contour: 'frllo', meaning: 'No medical commission data for a medicine prescribed by trade name', meaningRu: 'Отсутствуют сведения о врачебной комиссии при назначении лекарственного препарата по торговому наименованию' },
  { id: 83, mnemonic: 'FRLLO_RECIPE_DATE_ERROR', contour: 'frllo', meaning: 'The prescription date in the document is wrong', meaningRu: 'В СЭМД не корректно передана дата назначения' },
  { id: 84, mnemonic: 'FRLLO_EXPIRE_DATE_ERROR', contour: 'frllo', meaning: 'The expiry date does not agree with the period of dictionary 1.2.643.5.1.13.13.99.2.608', meaningRu: 'Дата срока действия не согласуется со сроком действия согласно справочнику ФНСИ 1.2.643.5.1.13.13.99.2.608' },
  { id: 85, mnemonic: 'FRLLO_RELISE_POSITION_ERROR', contour: 'frllo', meaning: 'The code of the dispensed medical product is missing or ambiguous', meaningRu: 'Не передан код отпущенной мед. продукции, либо передан неоднозначный код отпущенной мед. продукции' },
  { id: 86, mnemonic: 'FRLLO_RECIPE_IDENTIFY_ERROR', contour: 'frllo', meaning: 'No data of the prescription of the medical product given', meaningRu: 'Отсутствуют сведения о переданном назначении мед. Продукции' },
  { id: 87, mnemonic: 'FRLLO_RELEASE_ORGANIZATION_ERROR', contour: 'frllo', meaning: 'The organization that dispensed the medical product is missing or contradictory', meaningRu: 'Не переданы сведения об организации, отпустившей мед. продукцию, или переданы противоречивые сведения об организации' },
  { id: 88, mnemonic: 'FRLLO_RELISE_POSITION_ERROR', contour: 'frllo', meaning: 'A second entry of FRLLO_RELISE_POSITION_ERROR in the classifier; its description differs from that of id 85 and is not in the public transcription', meaningRu: null },
  { id: 89, mnemonic: 'FRLLO_RELISE_DATE_ERROR', contour: 'frllo', meaning: 'The dispensing date is wrong', meaningRu: 'Не корректно передана дата отпуска' },
  { id: 90, mnemonic: 'FRLLO_RELISE_QTY_ERROR', contour: 'frllo', meaning: 'The number of consumer packages dispensed does not agree with the number of consumer units', meaningRu: 'Количество отпущенных потребительских упаковок не согласуется с кол-вом потребительских единиц' },
  { id: 91, mnemonic: 'FRLLO_TRANSPORT_ERROR', contour: 'frllo', meaning: 'A wrong mechanism of transmitting the data is used', meaningRu: 'Используется некорректный механизм передачи сведений' },
  { id: 92, mnemonic: 'FRLLO_SEMD_FLK_ERROR', contour: 'frllo', meaning: 'The document did not pass format and logic checks (ФЛК), or was not sent to them', meaningRu: 'СЭМД не прошел ФЛК, либо не направлялся на ФЛК' },
  { id: 93, mnemonic: 'FRLLO_NOT_CORRECT_TYPE', contour: 'frllo', meaning: 'A document of a type the ФРЛЛО does not check was sent', meaningRu: 'Передан СЭМД с типом, для которого не предусмотрена проверка в ФРЛЛО' },
  { id: 94, mnemonic: 'FRLLO_UNKNOWN_SYSTEM', contour: 'frllo', meaning: 'The system that made the document could not be identified by dictionary 1.2.643.5.1.13.13.99.2.622', meaningRu: 'Не удалось определить информационную систему, сформировавшую СЭМД по справочнику 1.2.643.5.1.13.13.99.2.622' },
  { id: 95, mnemonic: 'RATE_LIMIT', contour: 'registration', meaning: 'Protective limit reached: retry in a minute or later', meaningRu: 'Достигнут защитный лимит, просьба повторить через минуту или позже' },
  { id: 96, mnemonic: 'VALSYS_REJECT', contour: 'registration', meaning: 'Error sending the validation request to the checking system', meaningRu: 'Ошибка отправки запроса на валидацию в проверяющую систему' },
  { id: 97, mnemonic: 'ASYNC_RESPONSE_TIMEOUT', contour: 'registration', meaning: 'Timed out waiting for the checking system\'s asynchronous answer', meaningRu: 'Превышено ожидание асинхронного ответа от проверяющей системы' },
  { id: 98, mnemonic: 'PATIENT_NAME_NOT_FOUND', contour: 'registration', meaning: 'The patient\'s first name is mandatory in the patient data', meaningRu: 'Имя пациента в составе сведений о пациенте обязательно' },
  { id: 99, mnemonic: 'PATIENT_SURNAME_NOT_FOUND', contour: 'registration', meaning: 'The patient\'s last name is mandatory in the patient data', meaningRu: 'Фамилия пациента в составе сведений о пациенте обязательна' },
  { id: 100, mnemonic: 'DUPLICATE_PATIENT_FOUND', contour: 'registration', meaning: 'More than one record found in the patient index (ГИП) by the local id', meaningRu: 'По локальному идентификатору в ГИП найдено более одной записи' },
  { id: 101, mnemonic: 'IPS_VALIDATION_WARNING', contour: 'registration', meaning: 'A remark of the ИПС subsystem on the request\'s data', meaningRu: 'Замечание от подсистемы ИПС по проверке данных запроса' },
  { id: 102, mnemonic: 'XML_VALIDATOR_ERROR', contour: 'registration', meaning: 'Internal error of the document\'s validation', meaningRu: 'Внутренняя ошибка валидации СЭМД' },
  { id: 103, mnemonic: 'SCHEMA_PROCESSING_ERROR', contour: 'registration', meaning: 'Internal error processing the validation template', meaningRu: 'Внутренняя ошибка обработки шаблона валидации' },
  { id: 104, mnemonic: 'XML_VALIDATION_ERROR', contour: 'registration', meaning: 'Error transforming the document for validation (Schematron)', meaningRu: 'Ошибка при трансформации СЭМД для проверки (Schematron)' },
  { id: 105, mnemonic: 'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT', contour: 'registration', meaning: 'The employee\'s certificate is not valid at the document\'s creation date', meaningRu: 'Сертификат сотрудника недействителен на дату создания документа' },
  { id: 106, mnemonic: 'INVALID_DOCTOR_FAMILY', contour: 'registration', meaning: 'The medical worker\'s last name in the registration request differs from the last name in the document', meaningRu: 'Фамилия [] медицинского работника в запросе на регистрацию отличается от фамилии [] в СЭМД. СНИЛС []' },
  { id: 107, mnemonic: 'INVALID_DOCTOR_NAME', contour: 'registration', meaning: 'The medical worker\'s first name in the registration request differs from the first name in the document', meaningRu: 'Имя [] медицинского работника в запросе на регистрацию отличается от имени [] в СЭМД. СНИЛС []' },
  { id: 108, mnemonic: 'INVALID_DOCTOR_PATRONYMIC', contour: 'registration', meaning: 'The medical worker\'s patronymic in the registration request differs from the patronymic in the document', meaningRu: 'Отчество [] медицинского работника в запросе на регистрацию отличается от отчества [] в СЭМД. СНИЛС []' },
  { id: 109, mnemonic: 'LEGAL_AUTHENTICATOR_NOT_FOUND', contour: 'registration', meaning: 'The medical worker who gave the document legal force is not found in the registration request', meaningRu: 'Медицинский работник [], придавший документу юридическую силу, не найден в запросе на регистрацию сведений' },
  { id: 110, mnemonic: 'INVALID_DOCTOR_INFO', contour: 'registration', meaning: 'A medical worker of the registration request is not found in the document', meaningRu: 'Медицинский работник [] из запроса на регистрацию сведений не найден в СЭМД' },
  { id: 111, mnemonic: 'INVALID_DOCTOR_ID', contour: 'registration', meaning: 'The medical worker\'s local id in the registration request differs from the medical worker\'s id in the document', meaningRu: 'Локальный идентификатор медицинского работника в запросе на регистрацию отличается от уникального идентификатора медицинского работника в СЭМД. СНИЛС []' },
  { id: 112, mnemonic: 'INVALID_DOCTOR_SNILS', contour: 'registration', meaning: 'The medical worker is not found in the document or in the registration request', meaningRu: 'Медицинский работник [] не найден в СЭМД или в запросе на регистрацию' },
  { id: 113, mnemonic: 'INVALID_DICTIONARY_MAPPING', contour: 'registration', meaning: 'A dictionary\'s field holding its code could not be found', meaningRu: 'Справочник OID [], версия []. Не удалось найти поле, отвечающее за код справочника' },
  { id: 114, mnemonic: 'INVALID_DICTIONARY', contour: 'registration', meaning: 'The dictionary may not be used in documents of this kind', meaningRu: 'Для документа вида [] недопустимо использование справочника []' },
  { id: 115, mnemonic: 'INVALID_DICTIONARY_OID', contour: 'registration', meaning: 'No dictionary with this OID', meaningRu: 'Справочник OID []. Справочник с указанным кодом отсутствует' },
  { id: 116, mnemonic: 'INVALID_DICTIONARY_VERSION', contour: 'registration', meaning: 'This version of the dictionary is not allowed for documents of this kind', meaningRu: 'Справочник OID []. Версия [] недопустима для данного документа вида []' },
  { id: 117, mnemonic: 'INVALID_ELEMENT_VALUE_CODE', contour: 'registration', meaning: 'No value with this code in the dictionary version', meaningRu: 'Справочник OID [], версия []. Значение с кодом [] отсутствует' },
  { id: 118, mnemonic: 'INVALID_ELEMENT_VALUE_NAME', contour: 'registration', meaning: 'The element\'s name differs from its name in the dictionary', meaningRu: 'Справочник OID [], версия []. Наименование элемента [] не соответствует наименованию элемента в НСИ []' },
  { id: 119, mnemonic: 'VALSYS_INTERNAL_ERROR', contour: 'registration', meaning: 'Internal error of the checking system while checking the document', meaningRu: 'Внутренняя ошибка при проверке ЭМД в проверяющей системе' },
  { id: 120, mnemonic: 'RECEPIENT_INFO_MISMATCH', contour: 'registration', meaning: 'The recipient of the registration request is not found in the document', meaningRu: 'Получатель из запроса на регистрацию сведений не найден в СЭМД' },
  { id: 121, mnemonic: 'RECEPIENT_SNILS_MISMATCH', contour: 'registration', meaning: 'The recipient\'s SNILS in the registration request differs from the SNILS in the document', meaningRu: 'СНИЛС получателя в запросе на регистрацию отличается от СНИЛС в СЭМД' },
  { id: 122, mnemonic: 'RECEPIENT_FAMILY_MISMATCH', contour: 'registration', meaning: 'The recipient\'s last name in the registration request differs from the last name in the document', meaningRu: 'Фамилия получателя в запросе на регистрацию отличается от фамилия в СЭМД' },
  { id: 123, mnemonic: 'RECEPIENT_NAME_MISMATCH', contour: 'registration', meaning: 'The recipient\'s first name in the registration request differs from the first name in the document', meaningRu: 'Имя получателя в запросе на регистрацию отличается от имени в СЭМД' },
  { id: 124, mnemonic: 'RECEPIENT_PATRONYMIC_MISMATCH', contour: 'registration', meaning: 'The recipient\'s patronymic in the registration request differs from the patronymic in the document', meaningRu: 'Отчество получателя в запросе на регистрацию отличается от отчества в СЭМД' },
  { id: 125, mnemonic: 'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT', contour: 'registration', meaning: 'The employee\'s certificate is not valid at the date the document is checked', meaningRu: 'Сертификат сотрудника недействителен на дату проверки документа' },
  { id: 126, mnemonic: 'TIME_EXPIRED_ERROR', contour: 'online-orders', meaning: 'The time to fulfil an online certificate order has run out', meaningRu: 'Истекло время выполнения заказа в рамках сервиса "Заказ справок онлайн"' },
  { id: 127, mnemonic: 'ORDER_ALREADY_PROCESSED', contour: 'online-orders', meaning: 'A status other than the one sent was already sent to the showcase for this order', meaningRu: 'По данному заказу уже был отправлен статус на витрину, отличный от переданного' },
  { id: 128, mnemonic: 'ORDER_NOT_FOUND', contour: 'online-orders', meaning: 'The registry has no order with this id', meaningRu: 'В РЭМД не найден заказ с переданным идентификатором' },
] as const satisfies readonly ClassifierEntry[];

/** A mnemonic of the classifier. */
export type ClassifierCode = (typeof CLASSIFIER_305)[number]['mnemonic'];

/** The classifier's entry of a mnemonic (the first, for the one it names twice). */
export const CLASSIFIER_BY_MNEMONIC: ReadonlyMap<string, ClassifierEntry> = new Map(
  [...CLASSIFIER_305].reverse().map((entry): [string, ClassifierEntry] => [entry.mnemonic, entry]),
);
