import { Alert, Button, Center, Group, Paper, PasswordInput, Stack, Text, TextInput } from "@mantine/core";
import { useForm } from "@mantine/form";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError, api, payload, setCsrfToken } from "../api/client";
import { LanguageSwitch, PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";
import { formErrors } from "../lib/errors";

/** The message for a refused sign-in or setup: a throttled one says to wait, not to retype. */
function refusal(e: unknown, t: (key: "login.tooManyAttempts") => string): string | null {
  return e instanceof ApiError && e.code === "TOO_MANY_ATTEMPTS" ? t("login.tooManyAttempts") : null;
}

function Frame({ title, intro, children }: { title: string; intro?: string; children: React.ReactNode }) {
  const { t } = useI18n();
  return (
    <Center component="main" mih="100vh" p="md" bg="var(--mantine-color-default-hover)">
      <Paper withBorder shadow="sm" p="xl" w="100%" maw={400}>
        <Stack>
          <Group justify="space-between">
            <Text c="dimmed" size="sm">
              {t("app.name")}
            </Text>
            <LanguageSwitch long />
          </Group>
          <PageTitle title={title} />
          {intro && <Text size="sm">{intro}</Text>}
          {children}
        </Stack>
      </Paper>
    </Center>
  );
}

/** First start: the owner (admin) account. */
export function Setup() {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const [general, setGeneral] = useState<string | null>(null);
  // The same query App made: from another machine the server asks for the one-time code.
  const status = useQuery({ queryKey: ["setup"], queryFn: () => payload(api.GET("/setup")) });
  const codeRequired = status.data?.setupCodeRequired === true;
  const form = useForm({
    initialValues: { email: "", password: "", confirm: "", setupCode: "" },
    validate: {
      // The server's rule (TOO_SHORT), said before the owner submits rather than after.
      password: (v) => ([...v].length < 10 ? t("settings.passwordTooShort") : null),
      confirm: (v, values) => (v === values.password ? null : t("setup.mismatch")),
    },
  });
  const mutation = useMutation({
    mutationFn: (v: { email: string; password: string; setupCode?: string }) =>
      payload(api.POST("/setup", { body: v })),
    onSuccess: async (info) => {
      setCsrfToken(info.csrfToken);
      await queryClient.invalidateQueries({ queryKey: ["setup"] });
      await queryClient.invalidateQueries({ queryKey: ["session"] });
    },
    onError: (e) => {
      const { fields, general } = formErrors(e, {}, ["email", "password"]);
      form.setErrors(fields);
      const code = e instanceof ApiError ? e.code : "";
      if (code === "SETUP_CODE_INVALID" || code === "SETUP_CODE_REQUIRED") {
        form.setFieldError("setupCode", t("setup.codeInvalid"));
        setGeneral(null);
      } else {
        setGeneral(refusal(e, t) ?? general);
      }
    },
  });
  return (
    <Frame title={t("setup.title")} intro={t("setup.intro")}>
      <form
        onSubmit={form.onSubmit((v) =>
          mutation.mutate({
            email: v.email,
            password: v.password,
            ...(codeRequired ? { setupCode: v.setupCode } : {}),
          }),
        )}
      >
        <Stack>
          {general && <Alert color="red">{general}</Alert>}
          {codeRequired && (
            <TextInput
              label={t("setup.code")}
              description={t("setup.codeHelp")}
              name="setupCode"
              autoComplete="one-time-code"
              required
              {...form.getInputProps("setupCode")}
            />
          )}
          <TextInput label={t("login.email")} name="email" autoComplete="username" required {...form.getInputProps("email")} />
          <PasswordInput
            label={t("login.password")}
            description={t("setup.passwordRule")}
            name="password"
            autoComplete="new-password"
            required
            data-testid="setup-password"
            {...form.getInputProps("password")}
          />
          <PasswordInput label={t("setup.confirm")} name="confirm" autoComplete="new-password" required {...form.getInputProps("confirm")} />
          <Button type="submit" loading={mutation.isPending}>
            {t("setup.submit")}
          </Button>
        </Stack>
      </form>
    </Frame>
  );
}

export function Login() {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const [general, setGeneral] = useState<string | null>(null);
  const form = useForm({ initialValues: { email: "", password: "" } });
  const mutation = useMutation({
    mutationFn: (v: { email: string; password: string }) => payload(api.POST("/session", { body: v })),
    onSuccess: async (info) => {
      setCsrfToken(info.csrfToken);
      await queryClient.invalidateQueries({ queryKey: ["session"] });
    },
    onError: (e) => {
      const { fields, general } = formErrors(e, {}, ["email", "password"]);
      form.setErrors(fields);
      setGeneral(
        e instanceof Error && "code" in e && e.code === "INVALID_CREDENTIALS"
          ? t("login.invalid")
          : (refusal(e, t) ?? general),
      );
    },
  });
  return (
    <Frame title={t("login.title")}>
      <form onSubmit={form.onSubmit((v) => mutation.mutate(v))}>
        <Stack>
          {general && (
            <Alert color="red" data-testid="login-error">
              {general}
            </Alert>
          )}
          <TextInput label={t("login.email")} name="email" autoComplete="username" required {...form.getInputProps("email")} />
          <PasswordInput label={t("login.password")} name="password" autoComplete="current-password" required {...form.getInputProps("password")} />
          <Button type="submit" loading={mutation.isPending}>
            {t("login.submit")}
          </Button>
        </Stack>
      </form>
    </Frame>
  );
}

/** The signed-in member's own password: the current one, then the new one twice. */
export function PasswordChange({ required = false, onChanged }: { required?: boolean; onChanged?: () => void }) {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const [general, setGeneral] = useState<string | null>(null);
  const form = useForm({
    initialValues: { currentPassword: "", newPassword: "", repeat: "" },
    validate: {
      newPassword: (v, values) =>
        v.length < 10 ? t("settings.passwordTooShort") : v === values.currentPassword ? t("settings.samePassword") : null,
      repeat: (v, values) => (v === values.newPassword ? null : t("settings.passwordMismatch")),
    },
  });
  const change = useMutation({
    mutationFn: (v: typeof form.values) =>
      payload(api.PUT("/session/password", { body: { currentPassword: v.currentPassword, newPassword: v.newPassword } })),
    onSuccess: async () => {
      form.reset();
      setGeneral(null);
      notifications.show({ color: "green", message: t("settings.passwordChanged") });
      await queryClient.invalidateQueries({ queryKey: ["session"] });
      onChanged?.();
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["currentPassword", "newPassword"]);
      const codes = e instanceof ApiError ? e.errors.map((x) => x.code) : [];
      form.setErrors({
        ...mapped.fields,
        ...(codes.includes("WRONG_PASSWORD") ? { currentPassword: t("settings.wrongPassword") } : {}),
        ...(codes.includes("SAME_PASSWORD") ? { newPassword: t("settings.samePassword") } : {}),
        ...(codes.includes("TOO_SHORT") ? { newPassword: t("settings.passwordTooShort") } : {}),
      });
      setGeneral(mapped.general);
    },
  });
  return (
    <form onSubmit={form.onSubmit((v) => change.mutate(v))} data-testid="password-change">
      <Stack maw={420}>
        {!required && <Text size="sm" c="dimmed">{t("settings.passwordHelp")}</Text>}
        {general && <Alert color="red">{general}</Alert>}
        <PasswordInput
          label={t("settings.currentPassword")}
          name="current-password"
          autoComplete="current-password"
          required
          {...form.getInputProps("currentPassword")}
        />
        <PasswordInput label={t("settings.newPassword")} name="new-password" autoComplete="new-password" required {...form.getInputProps("newPassword")} />
        <PasswordInput label={t("settings.repeatPassword")} name="repeat-password" autoComplete="new-password" required {...form.getInputProps("repeat")} />
        <Group justify="flex-end">
          <Button type="submit" loading={change.isPending} data-testid="change-password">
            {required ? t("login.changeSubmit") : t("settings.changePassword")}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** Signed in with a temporary password: nothing else until the member chooses their own. */
export function PasswordRequired({ email, onSignOut }: { email: string; onSignOut: () => void }) {
  const { t } = useI18n();
  return (
    <Frame title={t("login.mustChangeTitle")} intro={t("login.mustChangeIntro")}>
      <Text size="sm" c="dimmed">
        {email}
      </Text>
      <PasswordChange required />
      <Button variant="subtle" onClick={onSignOut}>
        {t("app.signOut")}
      </Button>
    </Frame>
  );
}
