// java.util.Properties as the oracle of test_config_files.py: prints each key and value, base64.
import java.io.*; import java.util.*;
public class PropertiesDump { public static void main(String[] a) throws Exception {
  Properties p = new Properties();
  try (Reader r = new InputStreamReader(new FileInputStream(a[0]), "UTF-8")) { p.load(r); }
  for (String k : new TreeSet<>(p.stringPropertyNames())) {
    System.out.println(Base64.getEncoder().encodeToString(k.getBytes("UTF-8")) + " " + Base64.getEncoder().encodeToString(p.getProperty(k).getBytes("UTF-8")));
  }
}}
