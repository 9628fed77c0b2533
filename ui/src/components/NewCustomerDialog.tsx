// "Nuevo cliente": registers a customer of a commerce from the back office. The body is the
// merchant API's `customer` (POST /user), and the server checks it with the same rules: each
// refused field is named beside its input, in the staff member's language.
import { Alert, Button, Group, Modal, Select, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate } from "react-router";
import { ApiError, api, payload } from "../api/client";
import { useI18n, useSession } from "../lib/context";
import type { Key } from "../lib/i18n";
import { formErrors } from "../lib/errors";
import { formatRut } from "../lib/rut";
import { useCommerces } from "./CommerceSelect";

/** The commerces as choices of a creation form (code, shown as name and RUT). */
export function useCommerceChoices() {
  const commerces = useCommerces();
  return (commerces.data?.items ?? []).map((c) => ({ value: c.code, label: `${c.name} (${formatRut(c.code)})` }));
}

/** Refusals the shared table does not word, as the creation forms say them. */
const OWN_CODES = [
  "DUPLICATED_USER_ID",
  "COMMERCE_NOT_FOUND",
  "USER_NOT_FOUND",
  "DUPLICATED_SIGNATORY",
  "DUPLICATED_EXTERNAL_PROCESS_ID",
  "NOT_ALLOWED",
  "AMOUNT_MISMATCH",
  "DATE_MISMATCH",
  "ENCRYPTED_PDF",
  "MISSING_SIGNATORY",
];

/**
 * `formErrors` for the creation forms: each field's first problem beside it, with the words
 * for the refusals only creation meets.
 */
export function creationErrors(
  error: unknown,
  paths: Record<string, string>,
  known: string[],
  t: (key: Key) => string,
): { fields: Record<string, string>; general: string | null } {
  const mapped = formErrors(error, paths, known);
  if (error instanceof ApiError) {
    const seen = new Set<string>();
    for (const e of error.errors) {
      const key = paths[e.field] ?? e.field;
      if (seen.has(key)) continue;
      seen.add(key);
      if (OWN_CODES.includes(e.code) && key in mapped.fields) mapped.fields[key] = t(`create.err.${e.code}` as Key);
    }
  }
  return mapped;
}

/** The commerce a creation starts with: the list's filter, else the only one there is. */
export function initialCommerce(filter: string | null | undefined, choices: { value: string }[]): string | null {
  if (filter) return filter;
  return choices.length === 1 ? choices[0].value : null;
}

const FIELDS = [
  "rut",
  "userId",
  "firstName",
  "lastName",
  "secondLastName",
  "email",
  "phone",
  "street",
  "number",
  "apartment",
  "commune",
  "city",
  "region",
] as const;
type Field = (typeof FIELDS)[number];

/** Where each request path's refusal is shown. */
const PATHS: Record<string, string> = {
  "customer.identificationDocument": "rut",
  "customer.identificationDocument.number": "rut",
  "customer.identificationDocument.type": "rut",
  "customer.userId": "userId",
  "customer.personalInformation": "firstName",
  "customer.personalInformation.firstName": "firstName",
  "customer.personalInformation.lastName": "lastName",
  "customer.personalInformation.secondLastName": "secondLastName",
  "customer.contacts": "email",
  "customer.contacts.email": "email",
  "customer.contacts.phone": "phone",
  "customer.address.street": "street",
  "customer.address.number": "number",
  "customer.address.apartment": "apartment",
  "customer.address.commune": "commune",
  "customer.address.city": "city",
  "customer.address.region": "region",
  commerce: "commerce",
};

const ADDRESS: Field[] = ["street", "number", "apartment", "commune", "city", "region"];

/** The "Nuevo cliente" button (operators and admins) and its dialog. */
export function NewCustomerButton({ commerce }: { commerce?: string | null }) {
  const { t } = useI18n();
  const session = useSession();
  const [opened, setOpened] = useState(false);
  if (!session.can("operator")) return null;
  return (
    <>
      <Button onClick={() => setOpened(true)} data-testid="new-customer">
        {t("create.newCustomer")}
      </Button>
      {opened && <NewCustomerDialog commerce={commerce ?? null} onClose={() => setOpened(false)} />}
    </>
  );
}

export function NewCustomerDialog({ commerce, onClose }: { commerce: string | null; onClose: () => void }) {
  const { t } = useI18n();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const choices = useCommerceChoices();
  const [chosen, setChosen] = useState<string | null>(null);
  const code = chosen ?? initialCommerce(commerce, choices);
  const [values, setValues] = useState<Record<Field, string>>(
    () => Object.fromEntries(FIELDS.map((f) => [f, ""])) as Record<Field, string>,
  );
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string | null>(null);
  const text = (v: string) => (v.trim() === "" ? undefined : v.trim());
  const mutation = useMutation({
    mutationFn: () => {
      const address = ADDRESS.some((f) => values[f].trim() !== "")
        ? Object.fromEntries(ADDRESS.map((f) => [f, text(values[f]) ?? null]))
        : undefined;
      return payload(
        api.POST("/customers", {
          body: {
            commerce: code ?? undefined,
            customer: {
              userId: text(values.userId),
              identificationDocument: { type: "RUT", number: values.rut },
              personalInformation: {
                firstName: values.firstName,
                lastName: values.lastName,
                secondLastName: text(values.secondLastName),
              },
              contacts: { email: values.email.trim(), phone: text(values.phone) },
              address,
            },
          },
        }),
      );
    },
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: ["customers"] });
      const p = created.customer.personalInformation;
      notifications.show({ color: "green", message: t("create.customerCreated", { name: `${p.firstName} ${p.lastName}` }) });
      onClose();
      void navigate(`/customers/${created.customer.internalUserId}`);
    },
    onError: (e) => {
      const mapped = creationErrors(e, PATHS, [...FIELDS, "commerce"], t);
      setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const input = (field: Field, label: string, extra: Partial<React.ComponentProps<typeof TextInput>> = {}) => (
    <TextInput
      label={label}
      value={values[field]}
      onChange={(e) => {
        const value = e.currentTarget.value;
        setValues((all) => ({ ...all, [field]: value }));
      }}
      error={errors[field]}
      name={field}
      data-testid={`customer-${field}`}
      {...extra}
    />
  );
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("create.newCustomer")} size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          mutation.mutate();
        }}
        noValidate
      >
        <Stack>
          {general && (
            <Alert color="red" data-testid="customer-error">
              {general}
            </Alert>
          )}
          <Select
            label={t("common.commerce")}
            placeholder={t("create.pickCommerce")}
            data={choices}
            value={code}
            onChange={setChosen}
            allowDeselect={false}
            required
            error={errors.commerce}
            data-testid="customer-commerce"
          />
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            {input("rut", "RUT", { required: true, description: t("create.rutHint"), inputMode: "text", autoComplete: "off" })}
            {input("userId", t("create.userId"), { description: t("create.userIdHint"), autoComplete: "off" })}
            {input("firstName", t("create.firstName"), { required: true, autoComplete: "given-name" })}
            {input("lastName", t("create.lastName"), { required: true, autoComplete: "family-name" })}
            {input("secondLastName", t("create.secondLastName"), { autoComplete: "off" })}
            {input("email", t("common.email"), { required: true, type: "email", autoComplete: "email" })}
            {input("phone", t("create.phone"), { type: "tel", autoComplete: "tel", placeholder: "+56 9 1234 5678" })}
          </SimpleGrid>
          <Text fw={600} size="sm">
            {t("create.address")}
          </Text>
          <SimpleGrid cols={{ base: 1, xs: 3 }}>
            {input("street", t("create.street"), { autoComplete: "address-line1" })}
            {input("number", t("create.number"), { autoComplete: "off" })}
            {input("apartment", t("create.apartment"), { autoComplete: "address-line2" })}
            {input("commune", t("create.commune"), { autoComplete: "address-level3" })}
            {input("city", t("create.city"), { autoComplete: "address-level2" })}
            {input("region", t("create.region"), { autoComplete: "address-level1" })}
          </SimpleGrid>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={mutation.isPending} data-testid="customer-submit">
              {t("create.submitCustomer")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
